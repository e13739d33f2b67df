"""``MergeTally``: PostgreSQL's per-week count of published merges, kept by triggers and folded by beat.

What it must equal is the count it replaced on the repository page: a
repository's references published at `now` (``Reference.objects.published``)
and merged, per week of ``merged_at`` in UTC. Each test changes what is
published some way -- publishing, scheduling, withdrawing, re-dating, moving,
deleting -- and compares the tally with that count at several moments, before
and after folding.
"""
import datetime
import importlib

import pytest
from django.db import connection, models
from django.db.models import Count
from django.db.models.functions import TruncWeek
from django.utils import timezone

from digests.factories import DigestFactory, DigestReferenceFactory, ReferenceFactory, RepositoryFactory
from digests.models import Digest, DigestReference, MergeTally, Reference
from digests.tasks import fold_merge_tallies
from publishing.workflow import Status

from .test_first_published import _race

pytestmark = pytest.mark.skipif(
    connection.vendor != "postgresql",
    reason="the tally's triggers are PostgreSQL's; SQLite charts live (CI's PostgreSQL pass runs these)",
)

MINUTE = datetime.timedelta(minutes=1)
HOUR = datetime.timedelta(hours=1)
DAY = datetime.timedelta(days=1)


def tallied(at) -> dict:
    """{(repository id, Monday): merges} from the tally at `at`, weeks summing to zero left out."""
    rows = MergeTally.objects.counted(at).values("repository", "week").annotate(total=models.Sum("merged"))
    return {(row["repository"], row["week"]): row["total"] for row in rows if row["total"]}


def counted_live(at) -> dict:
    """The same from the references themselves: published at `at`, merged, by UTC week."""
    rows = (Reference.objects.published(at).filter(merged_at__isnull=False).order_by()
            .annotate(week=TruncWeek("merged_at", output_field=models.DateField(), tzinfo=datetime.UTC))
            .values("repository", "week").annotate(total=Count("pk")))
    return {(row["repository"], row["week"]): row["total"] for row in rows}


def merges_of(repository, at) -> int:
    return sum(total for (repository_id, _week), total in tallied(at).items() if repository_id == repository.pk)


def assert_tally_is_live(*moments):
    for at in moments:
        live = counted_live(at)
        assert tallied(at) == live, at
    return live


@pytest.mark.django_db
def test_the_tally_follows_every_change_to_what_is_published_and_merged():
    now = timezone.now()
    repository, other = RepositoryFactory(), RepositoryFactory()
    references = [ReferenceFactory(repository=repository, merged_at=now - days * DAY - HOUR) for days in range(0, 40, 3)]
    unmerged = ReferenceFactory(repository=repository, kind="issue", merged_at=None)
    published = DigestFactory(published_at=now - 2 * HOUR)
    scheduled = DigestFactory(published_at=now + 3 * HOUR)
    draft = DigestFactory(status=Status.DRAFT, published_at=None)
    moments = (now, now + 4 * HOUR)

    for number, reference in enumerate([*references[:8], unmerged], start=1):
        DigestReferenceFactory(digest=published, reference=reference, number=number)
    for number, reference in enumerate(references[6:], start=1):  # two cited by both
        DigestReferenceFactory(digest=scheduled, reference=reference, number=number)
    DigestReferenceFactory(digest=draft, reference=references[-1], number=1)
    assert_tally_is_live(*moments)
    assert merges_of(repository, now) == 8 and merges_of(repository, now + 4 * HOUR) == len(references)

    Reference.objects.filter(pk=references[0].pk).update(merged_at=now - 100 * DAY)  # re-dated
    Reference.objects.filter(pk=references[1].pk).update(repository=other)  # moved
    with connection.cursor() as cursor:  # deleted while published (raw: the ORM protects cited references)
        cursor.execute("DELETE FROM digests_reference WHERE id = %s", [references[2].pk])
        cursor.execute("DELETE FROM digests_digestreference WHERE reference_id = %s", [references[2].pk])
    DigestReference.objects.filter(digest=published, reference=references[3]).delete()  # citation withdrawn
    assert_tally_is_live(*moments)

    Digest.objects.filter(pk=scheduled.pk).update(published_at=now - 5 * HOUR)  # brought forward
    draft.status, draft.published_at = Status.PUBLISHED, now - DAY
    draft.save()  # a draft published
    assert_tally_is_live(*moments, now - 3 * HOUR)

    published.status = Status.DRAFT
    published.save()  # unpublished
    Reference.objects.filter(pk=references[1].pk).update(repository=repository, merged_at=None)  # back, unmerged
    assert_tally_is_live(*moments)
    assert MergeTally.objects.filter(merged__lt=0).exists(), "withdrawals are rows of their own until folded"

    MergeTally.objects.fold(now)
    assert_tally_is_live(*moments)
    MergeTally.objects.fold(now + 4 * HOUR)  # the scheduled digest's withdrawn time has passed too
    assert_tally_is_live(now + 4 * HOUR)
    assert not MergeTally.objects.filter(merged__lt=0).exists()


@pytest.mark.django_db
def test_folding_sums_what_is_in_effect_and_leaves_the_scheduled_for_their_time():
    now = timezone.now()
    repository = RepositoryFactory()
    for hours in (1, 2, 3):
        digest = DigestFactory(published_at=now - hours * HOUR)
        for number in (1, 2):
            DigestReferenceFactory(digest=digest, number=number,
                                   reference=ReferenceFactory(repository=repository, merged_at=now - 2 * DAY))
    scheduled = DigestFactory(published_at=now + HOUR)
    DigestReferenceFactory(digest=scheduled, reference=ReferenceFactory(repository=repository, merged_at=now - 2 * DAY))
    week = {week for repository_id, week in counted_live(now + 2 * HOUR) if repository_id == repository.pk}.pop()
    assert MergeTally.objects.filter(repository=repository).count() == 7  # one per reference published

    fold_merge_tallies.apply()
    rows = list(MergeTally.objects.filter(repository=repository).values_list("week", "merged", "counted_from"))
    assert sorted(rows) == sorted([(week, 6, now - HOUR), (week, 1, scheduled.published_at)])
    assert_tally_is_live(now, now + 2 * HOUR)
    assert (merges_of(repository, now), merges_of(repository, now + 2 * HOUR)) == (6, 7)
    assert merges_of(repository, now - 9 * MINUTE) == 6, "a reader whose clock is behind the worker's sees them"
    assert MergeTally.objects.fold() == 0, "weeks already down to one row are left alone"

    MergeTally.objects.fold(now + 2 * HOUR)  # the scheduled digest's time has come
    assert list(MergeTally.objects.filter(repository=repository).values_list("week", "merged")) == [(week, 7)]


@pytest.mark.django_db(transaction=True)
def test_two_folds_at_once_count_every_row_once():
    """The second fold waits on the rows the first deletes, then skips them: nothing counted twice or lost."""
    now = timezone.now()
    repository = RepositoryFactory()
    for hours in range(1, 6):
        DigestReferenceFactory(digest=DigestFactory(published_at=now - hours * HOUR),
                               reference=ReferenceFactory(repository=repository, merged_at=now - 3 * DAY))
    before = tallied(now)
    blocked = _race(MergeTally.objects.fold, MergeTally.objects.fold)
    assert blocked
    assert tallied(now) == before == counted_live(now) and merges_of(repository, now) == 5
    assert MergeTally.objects.filter(repository=repository).count() == 1


@pytest.mark.django_db
def test_the_migrations_backfill_counts_what_the_triggers_count():
    now = timezone.now()
    for days in range(0, 30, 4):
        DigestReferenceFactory(digest=DigestFactory(published_at=now - days * DAY - HOUR),
                               reference=ReferenceFactory(merged_at=now - days * DAY - 2 * HOUR))
    DigestReferenceFactory(digest=DigestFactory(published_at=now + DAY), reference=ReferenceFactory(merged_at=now))
    kept = tallied(now), tallied(now + 2 * DAY)
    MergeTally.objects.all().delete()
    migration = importlib.import_module("digests.migrations.0016_merge_tally")
    with connection.cursor() as cursor:
        cursor.execute(migration.BACKFILL)
    assert (tallied(now), tallied(now + 2 * DAY)) == kept
    assert sum(kept[1].values()) - sum(kept[0].values()) == 1 and sum(kept[0].values()) >= 8


@pytest.mark.django_db(transaction=True)
def test_truncating_references_empties_the_tally():
    DigestReferenceFactory(digest=DigestFactory(), reference=ReferenceFactory(merged_at=timezone.now() - DAY))
    assert MergeTally.objects.exists()
    with connection.cursor() as cursor:
        cursor.execute("TRUNCATE digests_reference CASCADE")
    assert not MergeTally.objects.exists()
