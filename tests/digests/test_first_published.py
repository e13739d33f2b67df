"""``Reference.first_published_at`` is kept by the database on every path that changes what is published.

``Reference.objects.published()`` reads that column; what it must equal is the
rule it replaced: references cited by at least one published digest. Each test
changes citations or digests one way or another -- model saves, ``bulk_create``,
``update()``, deletes, stale saves, concurrent transactions on PostgreSQL -- and
compares the two.
"""
import datetime
import random
import threading

import pytest
from django.db import connection, connections, transaction
from django.utils import timezone

from digests.factories import DigestFactory, DigestReferenceFactory, ReferenceFactory, RepositoryFactory
from digests.models import Digest, DigestReference, Reference
from publishing.workflow import Status

HOUR = datetime.timedelta(hours=1)


def first_published(reference: Reference):
    return Reference.objects.values_list("first_published_at", flat=True).get(pk=reference.pk)


def published_now() -> set[int]:
    return set(Reference.objects.published().values_list("pk", flat=True))


def cited_by_a_published_digest() -> set[int]:
    """The rule ``published()`` kept before the column: a join through every published digest's citations."""
    return set(DigestReference.objects.filter(digest__in=Digest.objects.published()).values_list("reference", flat=True))


@pytest.mark.django_db
def test_a_draft_citation_publishes_nothing_and_publishing_the_digest_does():
    reference = ReferenceFactory()
    digest = DigestFactory(status=Status.DRAFT, published_at=None)
    DigestReferenceFactory(digest=digest, reference=reference)
    assert first_published(reference) is None and reference.pk not in published_now()

    digest.status, digest.published_at = Status.PUBLISHED, timezone.now() - HOUR
    digest.save()
    assert first_published(reference) == digest.published_at
    assert published_now() == {reference.pk}

    digest.status = Status.DRAFT
    digest.save()
    assert first_published(reference) is None and published_now() == set()


@pytest.mark.django_db
def test_the_earliest_published_digest_counts_and_removing_its_citation_falls_back_to_the_next():
    reference = ReferenceFactory()
    now = timezone.now()
    later = DigestFactory(published_at=now - HOUR)
    earlier = DigestFactory(published_at=now - 5 * HOUR)
    draft = DigestFactory(status=Status.DRAFT, published_at=now - 9 * HOUR)
    for digest in (later, earlier, draft):
        DigestReferenceFactory(digest=digest, reference=reference)
    assert first_published(reference) == earlier.published_at

    DigestReference.objects.filter(digest=earlier).delete()
    assert first_published(reference) == later.published_at
    later.delete()
    assert first_published(reference) is None


@pytest.mark.django_db
def test_a_scheduled_digest_publishes_its_references_on_the_minute():
    reference = ReferenceFactory()
    at = timezone.now() + HOUR
    DigestReferenceFactory(digest=DigestFactory(published_at=at), reference=reference)
    assert first_published(reference) == at
    assert reference.pk not in published_now()
    assert set(Reference.objects.published(at).values_list("pk", flat=True)) == {reference.pk}


@pytest.mark.django_db
def test_bulk_writes_and_updates_that_send_no_signals_are_kept_too():
    first, second = ReferenceFactory(), ReferenceFactory()
    published, draft = DigestFactory(), DigestFactory(status=Status.DRAFT)
    DigestReference.objects.bulk_create([
        DigestReference(digest=published, reference=first, number=1),
        DigestReference(digest=draft, reference=second, number=1),
    ])
    assert published_now() == {first.pk}

    Digest.objects.filter(pk=draft.pk).update(status=Status.PUBLISHED, published_at=timezone.now() - HOUR)
    assert published_now() == {first.pk, second.pk}

    DigestReference.objects.filter(digest=published).update(reference=second)  # the citation moves
    assert first_published(first) is None
    assert first_published(second) == published.published_at  # earlier than the other digest's
    assert published_now() == cited_by_a_published_digest() == {second.pk}


@pytest.mark.django_db
def test_a_stale_value_saved_over_it_is_replaced_by_the_computed_one():
    reference = ReferenceFactory()
    loaded = Reference.objects.get(pk=reference.pk)  # an editor opens it, or a webhook reads it
    digest = DigestFactory()
    DigestReferenceFactory(digest=digest, reference=reference)
    loaded.title = "Edited while a digest citing it was published"
    loaded.save()  # writes every column, first_published_at (None) among them
    assert first_published(reference) == digest.published_at

    made_up = Reference.objects.create(repository=reference.repository, kind=Reference.Kind.COMMIT, key="abc",
                                       title="Never cited", first_published_at=timezone.now() - 99 * HOUR)
    assert first_published(made_up) is None


@pytest.mark.django_db
def test_a_random_walk_of_publishing_and_citing_keeps_the_column_equal_to_the_rule():
    rng = random.Random(18)
    now = timezone.now()
    repository = RepositoryFactory()
    references = [ReferenceFactory(repository=repository) for _ in range(6)]
    digests = [DigestFactory(status=Status.DRAFT, published_at=None) for _ in range(4)]
    numbers = iter(range(1, 10_000))
    for step in range(120):
        digest = rng.choice(digests)
        action = rng.choice(["publish", "schedule", "unpublish", "cite", "uncite", "move", "retime"])
        if action in ("publish", "schedule", "retime"):
            offset = rng.choice([-1, 1]) * rng.randrange(1, 48) * HOUR if action == "retime" else (
                -rng.randrange(1, 48) * HOUR if action == "publish" else rng.randrange(1, 48) * HOUR)
            digest.status, digest.published_at = Status.PUBLISHED, now + offset
            digest.save()
        elif action == "unpublish":
            digest.status = rng.choice([Status.DRAFT, Status.ARCHIVED])
            digest.save()
        elif action == "cite":
            cited = set(digest.digest_references.values_list("reference", flat=True))
            free = [reference for reference in references if reference.pk not in cited]
            if free:
                DigestReference.objects.create(digest=digest, reference=rng.choice(free), number=next(numbers))
        elif action == "uncite":
            citation = digest.digest_references.order_by("?").first()
            if citation:
                citation.delete()
        else:  # move one citation to another digest that does not cite its reference
            citation = DigestReference.objects.order_by("?").first()
            others = [d for d in digests if not d.digest_references.filter(reference=citation.reference_id).exists()] \
                if citation else []
            if others:
                DigestReference.objects.filter(pk=citation.pk).update(digest=rng.choice(others), number=next(numbers))
        assert published_now() == cited_by_a_published_digest(), f"step {step}: {action}"
        for reference in references:
            expected = min((c.digest.published_at for c in reference.citations.select_related("digest")
                            if c.digest.status == Status.PUBLISHED and c.digest.published_at), default=None)
            assert first_published(reference) == expected, f"step {step}: {action}"


def _in_thread(work, started: threading.Event, release: threading.Event, errors: list):
    """Run `work` in a transaction of its own connection; wait for `release` before committing."""
    def run():
        try:
            with transaction.atomic():
                work()
                started.set()
                release.wait(10)
        except Exception as error:  # noqa: BLE001 -- reported by the test
            errors.append(error)
        finally:
            started.set()
            connections.close_all()
    thread = threading.Thread(target=run)
    thread.start()
    return thread


def _race(first_work, second_work):
    """`first_work` holds its transaction open while `second_work` runs (and must wait), then both commit."""
    errors: list = []
    first_started, second_started, release_first, release_second = (threading.Event() for _ in range(4))
    release_second.set()
    first = _in_thread(first_work, first_started, release_first, errors)
    assert first_started.wait(10)
    second = _in_thread(second_work, second_started, release_second, errors)
    second.join(1)
    blocked = second.is_alive()  # waiting on a lock the first transaction holds
    release_first.set()
    first.join(10)
    second.join(10)
    assert not errors, errors
    return blocked


postgresql_only = pytest.mark.skipif(
    connection.vendor != "postgresql",
    reason="concurrent writers are PostgreSQL's; SQLite has one writer at a time (CI's PostgreSQL pass runs these)",
)


@postgresql_only
@pytest.mark.django_db(transaction=True)
def test_two_transactions_citing_one_reference_at_once_keep_the_earliest():
    reference = ReferenceFactory()
    now = timezone.now()
    earlier, later = DigestFactory(published_at=now - 5 * HOUR), DigestFactory(published_at=now - HOUR)
    blocked = _race(lambda: DigestReference.objects.create(digest=earlier, reference=reference, number=1),
                    lambda: DigestReference.objects.create(digest=later, reference=reference, number=1))
    assert blocked
    assert first_published(reference) == earlier.published_at


@postgresql_only
@pytest.mark.django_db(transaction=True)
def test_citing_from_a_draft_while_another_transaction_publishes_it():
    reference = ReferenceFactory()
    digest = DigestFactory(status=Status.DRAFT, published_at=None)
    at = timezone.now() - HOUR

    def publish():
        Digest.objects.filter(pk=digest.pk).update(status=Status.PUBLISHED, published_at=at)

    blocked = _race(lambda: DigestReference.objects.create(digest=digest, reference=reference, number=1), publish)
    assert blocked
    assert first_published(reference) == at
    assert published_now() == cited_by_a_published_digest() == {reference.pk}
