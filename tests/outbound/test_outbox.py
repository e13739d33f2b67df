"""Announcements are rows written with the write and announced by a worker, once (issue 39).

A writer that dies after its commit, or a broker away at that moment, leaves the rows: beat's sweep
announces them. The writing request only records (one ``INSERT … SELECT`` for an author's posts),
and the worker builds and compares the JSON.
"""
import contextlib
import threading
from datetime import timedelta

import pytest
from django.db import connection, connections, transaction
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from blog.factories import AuthorFactory, PostFactory
from digests.factories import DigestReferenceFactory, ReferenceFactory
from outbound import announcing, delivery, outbox
from outbound.models import Announcement, Endpoint, Message
from outbound.tasks import sweep_announcements
from publishing.workflow import Status

pytestmark = pytest.mark.django_db


def said() -> list[tuple[str, int]]:
    return list(Message.objects.order_by("pk").values_list("type", "subject_id"))


def later(seconds: float = 60):
    return timezone.now() + timedelta(seconds=seconds)


@pytest.fixture
def lost(monkeypatch):
    """The commit's task is never queued: the process died there, or the broker was away."""
    monkeypatch.setattr(outbox, "queue", lambda ids: None)


def test_an_update_whose_task_was_lost_is_announced_once_by_the_sweep(
        receiver, queued, lost, django_capture_on_commit_callbacks):
    reference = ReferenceFactory(title="Fix the allocator")
    digest = DigestReferenceFactory(reference=reference).digest
    endpoint = Endpoint.objects.create(url=receiver.url)
    with django_capture_on_commit_callbacks(execute=True):
        reference.title = "Fix the caching allocator"
        reference.save()
    assert said() == [] and Announcement.objects.filter(subject_type="digest", subject_id=digest.pk).exists()
    assert outbox.sweep() == 0  # younger than OUTBOUND_ANNOUNCE_SWEEP_AFTER: its task may still run
    with django_capture_on_commit_callbacks(execute=True):
        assert outbox.sweep(now=later()) == 1
    assert outbox.sweep(now=later()) == 0 and not Announcement.objects.exists()
    assert said() == [("digest.updated", digest.pk)]
    assert delivery.deliver_due(endpoint.pk) == 1
    [payload] = receiver.verified(endpoint.whsec)
    assert payload["type"] == "digest.updated" and "caching allocator" in str(payload["data"]["references"])


def test_the_beat_task_sweeps_and_the_fast_path_after_it_finds_nothing_to_do(
        endpoint, queued, monkeypatch, settings, django_capture_on_commit_callbacks):
    settings.OUTBOUND_ANNOUNCE_SWEEP_AFTER = 0
    fast_path = []
    monkeypatch.setattr(outbox, "queue", fast_path.extend)
    with django_capture_on_commit_callbacks(execute=True):
        post = PostFactory()
    assert sweep_announcements.apply().get() == 1  # as beat runs it
    assert outbox.process(fast_path) == 0  # the task arrives late: announced already, nothing twice
    assert said() == [("post.published", post.pk)]


def test_a_rename_records_its_posts_in_one_statement_and_builds_no_json_in_the_save(
        endpoint, queued, monkeypatch, django_capture_on_commit_callbacks):
    ada = AuthorFactory(name="Ada")
    with django_capture_on_commit_callbacks(execute=True):
        posts = [PostFactory(authors=[ada]) for _ in range(5)]
    built = []
    real = announcing.current_json
    monkeypatch.setattr(announcing, "current_json", lambda subject, pk: built.append(pk) or real(subject, pk))
    with django_capture_on_commit_callbacks(execute=False) as callbacks, CaptureQueriesContext(connection) as queries:
        ada.name = "Ada Lovelace"
        ada.save()
    inserts = [q["sql"] for q in queries.captured_queries if q["sql"].startswith('INSERT INTO "outbound_announcement"')]
    assert len(inserts) == 1 and built == []  # recorded in one statement; nothing compared in the request
    assert Announcement.objects.filter(subject_type="post").count() == 5
    for callback in callbacks:
        callback()
    assert sorted(built) == sorted(post.pk for post in posts)
    assert sorted(said()[5:]) == [("post.updated", post.pk) for post in sorted(posts, key=lambda p: p.pk)]


def test_a_rolled_back_write_owes_nothing(endpoint, queued):
    reference = ReferenceFactory()
    DigestReferenceFactory(reference=reference)
    owed = Announcement.objects.count()
    with pytest.raises(RuntimeError), transaction.atomic():
        reference.title = "Never committed"
        reference.save()
        assert Announcement.objects.count() == owed + 1
        raise RuntimeError
    assert Announcement.objects.count() == owed


@pytest.mark.django_db(transaction=True)
def test_two_workers_at_once_announce_an_item_once(queued, lost, receiver):
    """Two real transactions: the fast path and the sweep on one item at the same moment."""
    if connection.vendor != "postgresql":
        pytest.skip("two processes announcing at once need PostgreSQL's row and advisory locks; SQLite has one writer")
    Endpoint.objects.create(url=receiver.url)
    reference = ReferenceFactory()
    digest = DigestReferenceFactory(reference=reference).digest
    Announcement.objects.all().delete()  # what the publication owed: this test is about the update
    reference.title = "Retitled"
    reference.save()
    ids = list(Announcement.objects.filter(subject_type="digest").values_list("pk", flat=True))
    start = threading.Barrier(2)
    results = []

    def work(run):
        try:
            start.wait(timeout=10)
            results.append(run())
        finally:
            connections.close_all()

    threads = [threading.Thread(target=work, args=(lambda: outbox.process(ids),)),
               threading.Thread(target=work, args=(lambda: outbox.sweep(now=later()),))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert sorted(results) == [0, 1]
    assert said() == [("digest.updated", digest.pk)]


def test_a_save_after_a_rolled_back_savepoint_of_the_same_item_is_still_announced(
        endpoint, queued, django_capture_on_commit_callbacks):
    """The row a rolled-back savepoint wrote is gone: the next save of the item writes its own.

    A record in memory of what the transaction had recorded outlived the rollback, so publishing
    the post later in the same transaction wrote no row and ``post.published`` was never sent.
    """
    with django_capture_on_commit_callbacks(execute=True):
        other = PostFactory(status=Status.DRAFT, published_at=None)
        post = PostFactory(status=Status.DRAFT, published_at=None)
    with django_capture_on_commit_callbacks(execute=True), transaction.atomic():
        other.title = "Still a draft"
        other.save()
        with contextlib.suppress(RuntimeError), transaction.atomic():
            post.title = "Never saved"
            post.save()
            raise RuntimeError
        post.status, post.published_at = Status.PUBLISHED, timezone.now()
        post.save()
        assert Announcement.objects.filter(subject_type="post", subject_id=post.pk).count() == 1
    assert said() == [("post.published", post.pk)]
    assert not Announcement.objects.exists()


def test_an_item_saved_several_times_in_a_transaction_is_announced_once(endpoint, queued,
                                                                      django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        post = PostFactory(status=Status.DRAFT, published_at=None)
    with django_capture_on_commit_callbacks(execute=True), transaction.atomic():
        post.status, post.published_at = Status.PUBLISHED, timezone.now()
        post.save()
        post.title = "Retitled before the commit"
        post.save()
    assert said() == [("post.published", post.pk)]  # the first save's row decides: it was a draft
    assert not Announcement.objects.exists()
