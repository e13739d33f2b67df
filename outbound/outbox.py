"""Announcements owed, kept as rows until a worker has compared and announced them (issue 39).

Recording (``record``, ``record_published``): a write that may change what readers see of a post or
digest writes an `Announcement` row per item in its own transaction -- one INSERT, and for a
set of items (an author's posts after a rename) one ``INSERT … SELECT`` whatever its size, so the
writing request never builds an item's JSON. Once the transaction commits, ``announce_changes``
is queued with the rows' ids (the fast path; inline where tasks run inline).

Announcing (``process``): per item, in one transaction, the worker takes the item's lock (on
PostgreSQL a transaction-level advisory lock, so two workers never compare one item at once), reads
every row owed for it, lets ``announcing.announce`` decide and write the event, and deletes those
rows. The message and the deletion commit together: an item is announced once, and a worker killed
half-way leaves its rows to be done again. Rows written after the worker read them stay for the
next run. ``sweep`` (beat's ``outbound.tasks.sweep_announcements``) announces every row older than
``OUTBOUND_ANNOUNCE_SWEEP_AFTER`` seconds: a writer killed between its commit and queuing the task,
a broker down then, a worker killed holding it.

What this replaced: the comparison ran in the writing process after its commit, so a process
killed in between lost the event for good, and a rename of an author with 2,000 posts compared
2,000 posts' JSON inside the admin's request.
"""
import logging
import time
from datetime import timedelta

from celery import shared_task
from django.conf import settings
from django.db import connection, transaction
from django.db.models import F
from django.utils import timezone

from publishing import queues

from . import announcing
from .models import Announcement, Message

logger = logging.getLogger(__name__)

#: Ids per queued task: a rename owing 2,000 items becomes 20 tasks that several workers share.
CHUNK = 100
#: A sweep stops starting items after this many seconds (the next one, 15 s later, goes on).
SWEEP_SECONDS = 20.0
SWEEP_BATCH = 200


def record(items: dict[tuple[str, int], bool], last_data: dict | None = None) -> list[tuple[int, tuple[str, int]]]:
    """Rows for these (subject, pk) items, with whether each was public before the write; (id, item) each."""
    now = timezone.now()
    rows = Announcement.objects.bulk_create(
        [Announcement(subject_type=subject, subject_id=pk, was_public=was_public, last_data=last_data, created_at=now)
         for (subject, pk), was_public in sorted(items.items())])
    return [(row.pk, (row.subject_type, row.subject_id)) for row in rows]


def record_published(subject: str, pks_query) -> list[tuple[int, tuple[str, int]]]:
    """Rows for the items of `pks_query` (a query of ids) public now, in one ``INSERT … SELECT``.

    For writes that change what items show without saving them (a renamed author, a retitled
    reference): such a change publishes nothing (``was_public`` stays empty: ``was_public()``).
    """
    model = announcing.SUBJECTS[subject][0]
    public = model.objects.published().filter(pk__in=pks_query).order_by().annotate(owed_id=F("pk")).values_list("owed_id")
    sql, params = public.query.sql_with_params()
    now = connection.ops.adapt_datetimefield_value(timezone.now())
    table = connection.ops.quote_name(Announcement._meta.db_table)
    with connection.cursor() as cursor:
        cursor.execute(
            f"INSERT INTO {table} (subject_type, subject_id, was_public, created_at) "  # the ORM's SQL; values are parameters
            f"SELECT %s, owed.owed_id, NULL, %s FROM ({sql}) owed RETURNING id, subject_id",
            [subject, now, *params])
        return [(row_id, (subject, pk)) for row_id, pk in cursor.fetchall()]


@shared_task(name="outbound.tasks.announce_changes", acks_late=True, ignore_result=True)
def announce_changes(announcement_ids: list[int]) -> int:
    """Announce the items these rows are owed for (the fast path after their commit); returns the events sent.

    Defined here, beside what queues it, as ``edge.outbox.send_purge`` is: tasks.py imports this module.
    """
    return process(announcement_ids)


def queue(announcement_ids: list[int]) -> None:
    """Queue ``announce_changes`` for these rows, CHUNK at a time; with the broker away the sweep finds them."""
    for start in range(0, len(announcement_ids), CHUNK):
        queues.queue_or_leave_to_sweep(announce_changes, announcement_ids[start:start + CHUNK])


def process(announcement_ids: list[int]) -> int:
    """Announce the items of these rows (and whatever else is owed for those items); returns the events sent."""
    items = Announcement.objects.filter(pk__in=announcement_ids).order_by("pk").values_list("subject_type", "subject_id")
    return sum(announce_owed(subject, pk) is not None for subject, pk in dict.fromkeys(items))


def announce_owed(subject: str, pk: int, wait: bool = True, due: bool = False) -> Message | None:
    """Announce one item from the rows owed for it, and delete them, in one transaction.

    Nothing is done when no row is owed any more (another worker did it), unless `due`: a scheduled
    item whose time came owes its ``*.published`` without a row. `wait=False` (the sweep) passes by
    an item another worker holds. An error is logged and leaves the rows for the sweep.
    """
    try:
        with transaction.atomic():
            if not lock(subject, pk, wait):
                return None
            rows = list(Announcement.objects.filter(subject_type=subject, subject_id=pk).order_by("pk"))
            if not rows and not due:
                return None
            gone = next((row.last_data for row in rows if row.last_data is not None), None)
            message = announcing.announce(subject, pk, was_public=was_public(rows), gone=gone)
            Announcement.objects.filter(pk__in=[row.pk for row in rows]).delete()
            return message
    except Exception:
        logger.exception("Could not announce %s %s; the sweep will try again.", subject, pk)
        return None


def was_public(rows: list[Announcement]) -> bool:
    """Whether readers saw the item before these writes: the first save's answer. Rows of changes to
    what it shows say nothing of that (written outside a transaction, a digest's re-rendered parts are
    recorded before its own save is: public now, yet published by that save); alone, they mean public."""
    return next((row.was_public for row in rows if row.was_public is not None), True)


def lock(subject: str, pk: int, wait: bool) -> bool:
    """This transaction's lock on the item's announcements (PostgreSQL; SQLite has one writer at a time)."""
    if connection.vendor != "postgresql":
        return True
    function = "pg_advisory_xact_lock" if wait else "pg_try_advisory_xact_lock"
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT {function}(hashtextextended(%s::text, 0))", [f"outbound:{subject}:{pk}"])
        return wait or cursor.fetchone()[0]


def sweep(now=None) -> int:
    """Announce every item owed since before ``OUTBOUND_ANNOUNCE_SWEEP_AFTER`` (oldest first, for up to
    SWEEP_SECONDS), passing by items another worker holds; returns the events sent."""
    now = now or timezone.now()
    waited = timedelta(seconds=settings.OUTBOUND_ANNOUNCE_SWEEP_AFTER)
    owed = Announcement.objects.filter(created_at__lte=now - waited).order_by("pk")
    started, after, seen, sent = time.monotonic(), 0, set(), 0
    while time.monotonic() - started < SWEEP_SECONDS:
        rows = list(owed.filter(pk__gt=after).values_list("pk", "subject_type", "subject_id")[:SWEEP_BATCH])
        if not rows:
            break
        after = rows[-1][0]
        for item in dict.fromkeys((subject, pk) for _, subject, pk in rows):
            if item not in seen and time.monotonic() - started < SWEEP_SECONDS:
                seen.add(item)
                sent += announce_owed(*item, wait=False) is not None
    return sent


def announce_due(now=None) -> int:
    """Send ``*.published`` for scheduled items whose time has come (beat, every 30 s); returns how many."""
    now = now or timezone.now()
    sent = 0
    for subject in announcing.SUBJECTS:
        for pk in announcing.unannounced(subject, now).values_list("pk", flat=True):
            sent += announce_owed(subject, pk, due=True) is not None
    return sent
