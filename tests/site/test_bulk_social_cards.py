"""Posts and digests written without a save get their og:image card from beat's sweep, not their next save.

``bulk_create`` (imports, the bench generator) skips ``save()``, which is where a card is drawn:
such a page named no og:image until someone edited it. The sweeps (``blog.tasks`` and
``digests.tasks.sweep_social_cards``, ``publishing.social_cards.draw_missing``) find the rows whose
``social_card`` names no stored card and draw them. An author's new name redraws the cards of their
posts (the byline), which only a byline row's save did before.
"""
import logging
import threading

import pytest
from django.conf import settings
from django.db import connection, connections, transaction

from blog import tasks as blog_tasks
from blog.factories import AuthorFactory, PostFactory
from blog.models import Post, PostCard
from digests import tasks as digest_tasks
from digests.factories import DigestFactory
from digests.models import Digest, DigestCard
from publishing import social_cards
from publishing.signals import content_changed
from tests.rerenders import run_rerenders

from .metas import metas
from .test_social_cards import fetch_card

pytestmark = pytest.mark.django_db


def bulk_posts(count: int) -> list[Post]:
    """Published posts as the bench generator writes them: ``bulk_create``, no ``save()``, no card."""
    return Post.objects.bulk_create(PostFactory.build(slug=f"bulk-{n}", title=f"Bulk post {n}") for n in range(count))


def bulk_digests(count: int) -> list[Digest]:
    topic = DigestFactory().topic
    return Digest.objects.bulk_create(
        DigestFactory.build(topic=topic, slug=f"bulk-{n}", date=f"2026-03-{n + 1:02d}") for n in range(count)
    )


def test_bulk_written_posts_and_digests_have_no_card_until_the_sweeps_draw_them(client):
    posts, digests = bulk_posts(3), bulk_digests(2)
    assert "og:image" not in metas(client, posts[0].get_absolute_url())
    assert set(social_cards.missing(Post.objects.all(), PostCard).values_list("pk", flat=True)) == {
        post.pk for post in posts}

    announced = []
    content_changed.connect(lambda sender, pks, **kwargs: announced.append((sender, sorted(pks))), weak=False,
                            dispatch_uid="test-bulk-cards")
    try:
        assert blog_tasks.sweep_social_cards() == 3
        assert digest_tasks.sweep_social_cards() == 2  # not the topic's first digest: DigestFactory saved it
    finally:
        content_changed.disconnect(dispatch_uid="test-bulk-cards")
    # their pages now name a card: the page cache and the edge hear of exactly those rows, once per sweep
    assert announced == [(Post, sorted(post.pk for post in posts)), (Digest, sorted(d.pk for d in digests))]

    for page in (*posts, *digests):
        fetch_card(client, page.get_absolute_url())  # named by the page, served, a PNG of the right size
    assert not social_cards.missing(Post.objects.all(), PostCard).exists()
    assert not social_cards.missing(Digest.objects.all(), DigestCard).exists()
    assert blog_tasks.sweep_social_cards() == digest_tasks.sweep_social_cards() == 0  # nothing left to draw


def test_the_sweep_draws_in_batches_newest_first_and_stops_at_its_time(monkeypatch):
    monkeypatch.setattr(social_cards, "SWEEP_BATCH", 2)
    posts = bulk_posts(5)
    assert Post.objects.draw_missing_social_cards(seconds=0) == 0  # out of time before the first batch
    drawn = Post.objects.draw_missing_social_cards()
    assert drawn == 5 and PostCard.objects.count() == 5
    newest_first = sorted((post.pk for post in posts), reverse=True)
    assert list(PostCard.objects.order_by("-pk").values_list("pk", flat=True)) == newest_first


def test_a_card_that_cannot_be_drawn_is_logged_and_the_others_are_drawn(monkeypatch, caplog):
    monkeypatch.setattr(social_cards, "SWEEP_BATCH", 2)
    posts = bulk_posts(4)
    broken = posts[2].pk
    draw = Post.draw_social_card

    def draw_or_fail(post):
        if post.pk == broken:
            raise OSError("font missing")
        draw(post)

    monkeypatch.setattr(Post, "draw_social_card", draw_or_fail)
    with caplog.at_level(logging.ERROR, logger="publishing.social_cards"):
        assert Post.objects.draw_missing_social_cards() == 3
    assert f"blog.Post {broken}" in caplog.text
    assert set(social_cards.missing(Post.objects.all(), PostCard).values_list("pk", flat=True)) == {broken}


def test_a_renamed_author_redraws_the_cards_of_their_posts(client):
    author = AuthorFactory(name="Ada")
    post = PostFactory(authors=[author])
    before_url, before_png = fetch_card(client, post.get_absolute_url())
    author.name = "Ada Lovelace"
    author.save()
    run_rerenders()  # the worker's part of the rename
    after_url, after_png = fetch_card(client, post.get_absolute_url())
    assert after_url != before_url and after_png != before_png
    assert not social_cards.missing(Post.objects.all(), PostCard).exists()


def test_beat_runs_both_sweeps_every_minute():
    schedule = {entry["task"]: entry for entry in settings.CELERY_BEAT_SCHEDULE.values()}
    for task in ("blog.tasks.sweep_social_cards", "digests.tasks.sweep_social_cards"):
        assert schedule[task]["schedule"] == 60.0 and schedule[task]["options"]["expires"] == 60.0


@pytest.mark.skipif(connection.vendor != "postgresql",
                    reason="SKIP LOCKED is PostgreSQL's; SQLite has one writer at a time "
                           "(CI's PostgreSQL pass runs it)")
@pytest.mark.django_db(transaction=True)
def test_a_sweep_passes_over_the_rows_another_sweep_holds():
    posts = bulk_posts(3)
    held, release, done = threading.Event(), threading.Event(), threading.Event()

    def hold_newest():  # another sweep, in the middle of drawing the newest row's card
        try:
            with transaction.atomic():
                list(Post.objects.select_for_update().filter(pk=posts[-1].pk))
                held.set()
                release.wait(10)
        finally:
            connections.close_all()
            done.set()

    threading.Thread(target=hold_newest).start()
    assert held.wait(10)
    try:
        assert Post.objects.draw_missing_social_cards() == 2  # without waiting for the held row
    finally:
        release.set()
        assert done.wait(10)
    assert set(social_cards.missing(Post.objects.all(), PostCard).values_list("pk", flat=True)) == {posts[-1].pk}
