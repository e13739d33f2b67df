"""Renaming an author or a tag in the admin returns at once; a worker re-renders their posts (issue 39, item 4).

The save used to re-render every post of the author and redraw its og:image card inline (about 30 ms a
post): an author with 2,000 posts was a minute-long request. Now the save records a ``PostRerender``
row and queues its task after the commit (``publishing.rerenders``). The save's work is the same for 3
posts as for 30 (queries, no card drawn); once the worker has run, the pages, the listing cards and
the og:image cards show the new name, and the caches heard of every post re-rendered.
"""
from datetime import timedelta
from unittest import mock

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone
from taggit.models import Tag

from blog import cards, tasks
from blog.factories import AuthorFactory, PostFactory
from blog.models import Author, Post, PostCard, PostRerender
from publishing import queues, rerenders, social_cards
from publishing.signals import content_changed
from tests.rerenders import run_rerenders
from tests.site.helpers import visible_text
from tests.site.test_social_cards import fetch_card

pytestmark = pytest.mark.django_db


def archive(posts: int, tag: str = "compilers") -> Author:
    author = AuthorFactory(name="Ada Writer", handle="ada", slug="ada")
    for _ in range(posts):
        PostFactory(authors=[author], tags=[tag])
    return author


def save_in_admin(client, django_capture_on_commit_callbacks, admin_form_data, url: str, **changes):
    """POST the change form with `changes`, as a browser would; returns (queries, og:image cards drawn, posts
    re-rendered, on-commit callbacks)."""
    data = admin_form_data(client.get(url), **changes)
    with mock.patch.object(social_cards, "draw", wraps=social_cards.draw) as draw, \
            mock.patch.object(cards, "render_parts", wraps=cards.render_parts) as rendered, \
            django_capture_on_commit_callbacks(execute=False) as callbacks, \
            CaptureQueriesContext(connection) as queries:
        response = client.post(url, data)
    assert response.status_code == 302, response.content.decode()[:2000]
    return len(queries), draw.call_count, rendered.call_count, len(callbacks)


@pytest.mark.parametrize("role", ["editor", "publisher"])
def test_renaming_an_author_costs_the_same_for_3_posts_as_for_30_and_draws_no_card(
        role, request, client, django_capture_on_commit_callbacks, admin_form_data):
    client.force_login(request.getfixturevalue(role))
    costs, owed = [], []
    for posts in (3, 30):
        author = archive(posts)
        url = f"/admin/blog/author/{author.pk}/change/"
        costs.append(save_in_admin(client, django_capture_on_commit_callbacks, admin_form_data, url,
                                   name="Ada Lovelace"))
        owed.append(PostRerender.objects.filter(kind="author", object_id=author.pk).count())
        Post.objects.all().delete()
        PostRerender.objects.all().delete()
        author.delete()
    assert costs[0] == costs[1]
    assert costs[0][1] == costs[0][2] == 0  # no og:image card drawn, no post re-rendered in the request
    assert owed == [1, 1]  # what it owes, for the worker


def test_after_the_worker_the_pages_and_cards_show_the_new_name(client, publisher, django_capture_on_commit_callbacks,
                                                                admin_form_data):
    author = archive(3)
    post = author.posts.first()
    before_url, before_png = fetch_card(client, post.get_absolute_url())
    assert "Ada Writer" in visible_text(client.get("/posts/").content.decode())  # cached now
    client.force_login(publisher)
    save_in_admin(client, django_capture_on_commit_callbacks, admin_form_data,
                  f"/admin/blog/author/{author.pk}/change/", name="Ada Lovelace", handle="")
    client.logout()
    assert "Ada Writer" in visible_text(client.get(post.get_absolute_url()).content.decode())  # not yet

    announced = []
    content_changed.connect(receiver := lambda sender, pks=None, **kw: announced.append((sender, set(pks))),
                            weak=False)
    try:
        assert run_rerenders() == 1
    finally:
        content_changed.disconnect(receiver)
    assert (Post, set(author.posts.values_list("pk", flat=True))) in announced  # page cache and edge follow
    assert not PostRerender.objects.exists()
    listing = visible_text(client.get("/posts/").content.decode())
    assert "Ada Lovelace" in listing and "Ada Writer" not in listing
    assert "Ada Lovelace" in visible_text(client.get(post.get_absolute_url()).content.decode())
    after_url, after_png = fetch_card(client, post.get_absolute_url())
    assert after_url != before_url and after_png != before_png
    assert not social_cards.missing(Post.objects.all(), PostCard).exists()


def test_editing_what_no_post_shows_owes_nothing(client, editor, django_capture_on_commit_callbacks,
                                                  admin_form_data):
    author = archive(3)
    client.force_login(editor)
    save_in_admin(client, django_capture_on_commit_callbacks, admin_form_data,
                  f"/admin/blog/author/{author.pk}/change/", bio="Writes about compilers.")
    assert not PostRerender.objects.exists()


def test_renaming_a_tag_costs_the_same_for_3_posts_as_for_30_and_the_worker_re_renders(
        client, publisher, django_capture_on_commit_callbacks, admin_form_data):
    client.force_login(publisher)
    costs = []
    for posts, name in ((3, "small"), (30, "large")):
        archive(posts, tag=name)
        tag = Tag.objects.get(name=name)
        costs.append(save_in_admin(client, django_capture_on_commit_callbacks, admin_form_data,
                                   f"/admin/taggit/tag/{tag.pk}/change/", name=f"{name}-renamed"))
    assert costs[0] == costs[1] and costs[0][1] == costs[0][2] == 0
    assert run_rerenders() == 2
    client.logout()
    listing = client.get("/posts/?page=1").content.decode()
    assert "large-renamed" in listing and ">large<" not in listing
    assert all(post.authors_tags["tags"] in (["small-renamed"], ["large-renamed"]) for post in Post.objects.all())


def test_a_rename_whose_task_was_lost_is_queued_again_by_the_sweep():
    """The broker was down at the commit, or the worker died: beat's card sweep queues the row again."""
    author = archive(2)
    author.name = "Ada Lovelace"
    author.save()  # in the test's transaction: the task queued after the commit is never sent
    row = PostRerender.objects.get()
    queued = []
    with mock.patch.object(tasks.rerender, "apply_async", lambda args, **options: queued.extend(args)):
        tasks.sweep_social_cards()
        assert queued == []  # too recent: its own task may still come
        rerenders.sweep(PostRerender, tasks.rerender, now=timezone.now() + rerenders.SWEEP_AFTER * 2)
        assert queued == [row.pk]
        PostRerender.objects.filter(pk=row.pk).update(claimed_until=timezone.now() + timedelta(minutes=5))
        assert rerenders.sweep(PostRerender, tasks.rerender, now=timezone.now() + rerenders.SWEEP_AFTER * 2) == 0
    assert not tasks.rerender(row.pk)  # held by another worker: not run twice at once
    PostRerender.objects.filter(pk=row.pk).update(claimed_until=timezone.now() - timedelta(seconds=1))
    assert tasks.rerender(row.pk)  # a lease run out (its worker died): run again
    assert {post.authors_tags["authors"][0]["name"] for post in Post.objects.all()} == {"Ada Lovelace"}


def test_the_sweep_leaves_a_row_whose_task_still_waits_in_the_queue(monkeypatch, django_capture_on_commit_callbacks):
    """A backlog is not a lost task: the sweep sends no copy of a task still waiting (``publishing.queues``)."""
    sent = []
    monkeypatch.setattr(tasks.rerender, "apply_async", lambda args, **options: sent.append((args, options)))
    author = archive(1)
    with django_capture_on_commit_callbacks(execute=True):
        author.name = "Ada Lovelace"
        author.save()
    row = PostRerender.objects.get()
    [(args, options)] = sent
    assert args == (row.pk,) and options["task_id"].startswith(f"postrerender:{row.pk}:")  # an id naming its row

    later = timezone.now() + rerenders.SWEEP_AFTER * 2
    asked = []
    monkeypatch.setattr(queues, "waiting", lambda app, kind: asked.append(kind) or {str(row.pk)})
    assert rerenders.sweep(PostRerender, tasks.rerender, now=later) == 0  # still waiting: no copy
    assert asked == ["postrerender"] and len(sent) == 1
    monkeypatch.setattr(queues, "waiting", lambda app, kind: set())  # the message was lost
    assert rerenders.sweep(PostRerender, tasks.rerender, now=later) == 1
    assert sent[1][0] == (row.pk,) and sent[1][1]["task_id"].startswith(f"postrerender:{row.pk}:")
    monkeypatch.setattr(queues, "waiting", lambda app, kind: None)  # the broker cannot say: queue it
    assert rerenders.sweep(PostRerender, tasks.rerender, now=later) == 1


def test_a_rerender_that_always_fails_is_given_up_after_the_cap_and_kept(monkeypatch, caplog):
    """Retried lease after lease forever, it now stops with an error an operator sees, and its row stays."""
    author = archive(1)
    author.name = "Ada Lovelace"
    author.save()
    row = PostRerender.objects.get()

    def broken(pk, claim):
        raise RuntimeError("the card renderer is broken")

    monkeypatch.setitem(tasks.RERENDERS, "author", broken)
    monkeypatch.setattr(tasks.rerender, "apply_async", lambda args, **options: None)
    monkeypatch.setattr(queues, "waiting", lambda app, kind: set())
    for attempt in range(1, rerenders.MAX_ATTEMPTS + 1):
        PostRerender.objects.filter(pk=row.pk).update(claimed_until=None)  # its lease ran out
        assert rerenders.sweep(PostRerender, tasks.rerender, now=timezone.now() + rerenders.SWEEP_AFTER * 2) == 1
        with pytest.raises(RuntimeError), caplog.at_level("ERROR", logger="publishing.rerenders"):
            tasks.rerender(row.pk)
        assert PostRerender.objects.get(pk=row.pk).attempts == attempt
    [given_up] = [record for record in caplog.records if record.levelname == "ERROR"]
    assert f"after {rerenders.MAX_ATTEMPTS} failed attempts" in given_up.getMessage()

    PostRerender.objects.filter(pk=row.pk).update(claimed_until=None)
    assert rerenders.sweep(PostRerender, tasks.rerender, now=timezone.now() + rerenders.SWEEP_AFTER * 2) == 0
    assert not tasks.rerender(row.pk)  # a stray task runs it no more
    assert PostRerender.objects.filter(pk=row.pk, attempts=rerenders.MAX_ATTEMPTS).exists()  # kept, for an operator
