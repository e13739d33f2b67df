"""Purges follow content: a write names exactly the keys of the pages showing it, sent after commit."""
import datetime

import pytest
from django.db import transaction
from django.utils import timezone

from blog.factories import PostFactory
from blog.models import Post
from digests.models import Digest
from edge import outbox, tasks
from edge.keys import tag_key
from edge.models import Purge
from publishing.signals import announce_bulk_write
from publishing.workflow import Status

pytestmark = pytest.mark.django_db(transaction=False)


@pytest.fixture
def sent(settings, monkeypatch):
    """The purges sent after commit (keys, eta): each one's recorded row as it was committed."""
    settings.EDGE_PURGE_BACKEND = "varnish"
    settings.EDGE_VARNISH_URLS = ["http://127.0.0.1:9"]
    queued = []
    monkeypatch.setattr(outbox, "queue", lambda pk: queued.append((set(Purge.objects.get(pk=pk).keys), None)))
    monkeypatch.setattr(outbox, "send_now", lambda keys: queued.append((set(keys), None)) or 0)
    return queued


def purged(sent) -> set[str]:
    return set().union(*(keys for keys, eta in sent if eta is None)) if sent else set()


def test_editing_a_post_purges_its_pages_not_an_unrelated_post_or_other_tag_pages(
        content, sent, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        content.first.title = "First, edited"
        content.first.save()
    keys = purged(sent)
    assert f"post-{content.first.pk}" in keys
    assert f"post-{content.second.pk}" not in keys and tag_key("rust") not in keys
    assert "posts" not in keys  # an edit moves no listing: the cards carry the post's key


def test_publishing_a_post_purges_its_listings_tags_and_authors(content, sent, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        post = PostFactory(status=Status.DRAFT, authors=[content.ada], tags=["python"])
    assert sent == []  # a draft shows nowhere
    with django_capture_on_commit_callbacks(execute=True):
        post.status, post.published_at = Status.PUBLISHED, timezone.now()
        post.save()
    keys = purged(sent)
    assert {f"post-{post.pk}", "posts", "tags", tag_key("python"), f"author-{content.ada.pk}"} <= keys
    assert tag_key("rust") not in keys and f"author-{content.bob.pk}" not in keys


def test_nothing_is_sent_before_the_commit_nor_after_a_rollback(content, sent, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        content.first.save()
    assert sent == [] and callbacks
    with pytest.raises(RuntimeError), transaction.atomic():
        content.second.save()
        raise RuntimeError
    assert sent == []
    [row] = Purge.objects.all()  # the first save's, waiting for its commit; the rolled-back save left no key in it
    assert f"post-{content.first.pk}" in row.keys and f"post-{content.second.pk}" not in row.keys


def test_a_purge_is_recorded_in_the_write_s_own_transaction(content, sent, django_capture_on_commit_callbacks):
    """Committed together with the write: a broker down at the commit, or a worker killed holding the task,
    leaves the row for the sweep (it used to leave only a lost task)."""
    with django_capture_on_commit_callbacks(execute=False):
        with transaction.atomic():
            content.first.title = "Durable"
            content.first.save()
            content.first.tags.add("durability")
        [row] = Purge.objects.all()
    assert {f"post-{content.first.pk}", tag_key("durability")} <= set(row.keys)


def test_one_transaction_sends_one_purge(content, sent, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True), transaction.atomic():
        content.first.save()
        content.second.save()
    assert len(sent) == 1 and {f"post-{content.first.pk}", f"post-{content.second.pk}"} <= sent[0][0]


def test_renaming_a_tag_purges_its_pages_and_its_posts(content, sent, django_capture_on_commit_callbacks):
    tag = content.first.tags.get()
    with django_capture_on_commit_callbacks(execute=True):
        tag.name = "Python 3"
        tag.save()
    keys = purged(sent)
    assert {tag_key("python"), tag_key("Python 3"), "tags", f"post-{content.first.pk}"} <= keys
    assert f"post-{content.second.pk}" not in keys


def test_removing_a_tag_purges_that_tag_page(content, sent, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        content.first.tags.remove("python")
    assert {tag_key("python"), f"post-{content.first.pk}"} <= purged(sent)


def test_adding_a_post_from_the_authors_side_purges_that_post_and_author(
        content, sent, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        content.bob.posts.add(content.first, through_defaults={"position": 1})
    keys = purged(sent)
    assert {f"post-{content.first.pk}", f"author-{content.bob.pk}"} <= keys and "site" not in keys
    assert f"post-{content.second.pk}" not in keys


def test_digest_writes_purge_the_digest_its_topic_and_repositories(content, sent, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        content.digest.status = Status.ARCHIVED
        content.digest.save()
    keys = purged(sent)
    assert {f"digest-{content.digest.pk}", "digests", f"topic-{content.topic.pk}",
            f"repo-{content.repository.pk}"} <= keys


def test_bulk_writes_purge_the_published_rows_only(content, sent, django_capture_on_commit_callbacks):
    draft = PostFactory(status=Status.DRAFT)
    with django_capture_on_commit_callbacks(execute=True):
        announce_bulk_write(Post, [content.first.pk, draft.pk])
        announce_bulk_write(Digest, Digest.objects.filter(pk=content.digest.pk).values("pk"))
    keys = purged(sent)
    assert {f"post-{content.first.pk}", f"digest-{content.digest.pk}"} <= keys and f"post-{draft.pk}" not in keys


def test_a_scheduled_post_is_purged_again_at_its_time(content, sent, monkeypatch, django_capture_on_commit_callbacks):
    timed = []
    monkeypatch.setattr(tasks.purge_published, "apply_async", lambda args, eta: timed.append((args, eta)))
    at = timezone.now() + datetime.timedelta(hours=2)
    with django_capture_on_commit_callbacks(execute=True):
        post = PostFactory(published_at=at, tags=["python"])
    assert timed == [(("blog.Post", post.pk), at)]
    assert tasks.purge_published("blog.Post", post.pk) == 0  # not yet live: nothing to purge
    sent.clear()
    Post.objects.filter(pk=post.pk).update(published_at=timezone.now())  # its time has come
    assert tasks.purge_published("blog.Post", post.pk) > 0
    assert {f"post-{post.pk}", "posts", tag_key("python")} <= purged(sent)


def test_the_sweep_purges_what_went_live_since_the_last_sweep_once(content, settings):
    from edge import scheduling

    now = timezone.now()
    scheduling.sweep(now)
    post = PostFactory(published_at=now + datetime.timedelta(seconds=30), tags=["python"])
    assert f"post-{post.pk}" not in scheduling.sweep(now + datetime.timedelta(seconds=10))
    due = scheduling.sweep(now + datetime.timedelta(seconds=31))
    assert {f"post-{post.pk}", "posts", tag_key("python")} <= due
    scheduling.sweep(now + datetime.timedelta(seconds=40))  # sweeps overlap by OVERLAP (5 s): may purge again
    assert f"post-{post.pk}" not in scheduling.sweep(now + datetime.timedelta(seconds=50))
