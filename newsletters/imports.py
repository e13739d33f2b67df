"""CSV imports of subscribers, run by a worker: the admin's request only stores the file and returns.

An upload of 100,000 addresses took one request (and queued a task per address) when the import ran
inside it. Now ``start`` keeps the file in a ``SubscriberImport`` row and the view queues
``import_subscribers`` once that commits; ``run`` (the task) writes it ``csv_io.BATCH`` rows at a time.

Each batch is one transaction: its subscribers, their subscriptions, the confirmations they are owed
(rows, not tasks: ``confirmations.send_owed`` sends them in batches) and the import's progress —
``lines_done``, the counts, the bad lines met so far. So progress is exactly what is written, and a
worker killed mid-batch loses that batch's transaction, nothing else. Its lease (``LEASE``, renewed
at every batch) then runs out, the beat sweep queues the import again (``stalled``), and the worker
taking it over reads the file past ``lines_done``: no address is written twice and none is skipped.
The progress UPDATE also checks ``lines_done`` is still where this worker left it, so a worker that
lost its lease to another cannot commit a batch twice.
"""
import datetime
import logging

from django.db import transaction
from django.db.models import F, Q
from django.utils import timezone

from . import csv_io
from .models import SubscriberImport

logger = logging.getLogger(__name__)

#: How long a worker holds an import without writing a batch (a batch of 1,000 rows takes well under a second).
LEASE = datetime.timedelta(minutes=2)
#: A queued import older than this whose task is not waiting is queued again by the sweep.
GRACE = datetime.timedelta(minutes=1)
#: Bad lines kept with their reason (the rest are counted): what the admin lists.
INVALID_KEPT = 50


class Lost(Exception):
    """Another worker took the import over: this one's batch is rolled back and it stops."""


def start(text: str, filename: str, consented: bool, user=None) -> SubscriberImport:
    """Keep the uploaded CSV (decoded and checked by the form) for a worker; the caller queues it on commit."""
    lines = text.count("\n") + (1 if text and not text.endswith("\n") else 0)
    return SubscriberImport.objects.create(data=text.encode(), filename=filename[:255], consented=consented,
                                           requested_by=user, lines_total=lines)


def stalled(now=None) -> list[int]:
    """Imports queued a while ago (their task lost?) and imports whose worker's lease ran out."""
    now = now or timezone.now()
    waiting = Q(state=SubscriberImport.State.QUEUED, created_at__lte=now - GRACE)
    dead = Q(state=SubscriberImport.State.RUNNING, leased_until__lt=now)
    return list(SubscriberImport.objects.filter(waiting | dead).order_by("pk").values_list("pk", flat=True))


def _claim(import_id: int) -> bool:
    now = timezone.now()
    free = Q(leased_until__isnull=True) | Q(leased_until__lt=now)
    claimed = SubscriberImport.objects.filter(
        free, pk=import_id, state__in=[SubscriberImport.State.QUEUED, SubscriberImport.State.RUNNING])
    if not claimed.update(state=SubscriberImport.State.RUNNING, leased_until=now + LEASE):
        return False
    SubscriberImport.objects.filter(pk=import_id, started_at__isnull=True).update(started_at=now)
    return True


def run(import_id: int, on_batch=None) -> str:
    """Import what is left of the file; `on_batch()` after each batch that owes confirmations (queue them)."""
    if not _claim(import_id):
        return "held by another worker, or done"
    job = SubscriberImport.objects.get(pk=import_id)
    report, cursor = csv_io.Report(), job.lines_done
    try:
        for batch in csv_io.batches(bytes(job.data).decode(), report, after=cursor):
            with transaction.atomic():
                counted = csv_io.import_batch(batch, job.consented)
                cursor = _advance(job, cursor, batch[-1].line, counted, report)
            if on_batch and counted.confirmations:
                on_batch()
        with transaction.atomic():
            _advance(job, cursor, max(cursor, job.lines_total), csv_io.Report(), report, done=True)
    except Lost:
        return f"taken over at line {cursor}"
    except Exception as error:
        logger.exception("Import %s failed at line %s.", import_id, cursor)
        SubscriberImport.objects.filter(pk=import_id, lines_done=cursor).update(
            state=SubscriberImport.State.FAILED, error=f"{type(error).__name__}: {error}"[:2000], leased_until=None)
        raise
    return f"done through line {max(cursor, job.lines_total)}"


def _advance(job: SubscriberImport, before: int, line: int, counted: csv_io.Report, report: csv_io.Report,
             done: bool = False) -> int:
    """Record, in the batch's transaction, that the rows through `line` are written: the counts, the
    bad lines up to it (``report.invalid`` keeps the later ones) and a renewed lease."""
    bad = [item for item in report.invalid if item[0] <= line]
    report.invalid = [item for item in report.invalid if item[0] > line]
    job.invalid = [*job.invalid, *([line_, reason] for line_, reason in bad)][:INVALID_KEPT]
    now = timezone.now()
    ending = {"state": SubscriberImport.State.DONE, "finished_at": now, "data": b"", "leased_until": None} \
        if done else {"leased_until": now + LEASE}
    mine = SubscriberImport.objects.filter(pk=job.pk, lines_done=before, state=SubscriberImport.State.RUNNING)
    updated = mine.update(
        lines_done=line, invalid=job.invalid, invalid_count=F("invalid_count") + len(bad),
        created=F("created") + counted.created, existing=F("existing") + counted.existing,
        suppressed=F("suppressed") + counted.suppressed, confirmations=F("confirmations") + counted.confirmations,
        **ending)
    if not updated:
        raise Lost
    return line
