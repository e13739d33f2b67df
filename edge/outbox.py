"""The edge's outbox: purges recorded with the writes that need them, sent by workers until the edge confirms.

Recording (``record``): a write's keys go into its transaction's ``Purge`` row -- an INSERT
the first time, an UPDATE when a later write of the same transaction adds keys -- and once
the transaction commits, ``send_purge`` is queued for that row: the fast path. A rolled-back
transaction takes its row with it. Outside a transaction each write is its own row.

Sending (``send``): the rows are locked (``SKIP LOCKED``: a duplicate task or the sweep
passes them by), their keys purged merged, and the rows deleted; for the nodes that failed
they stay, to be tried again after a backoff (1, 2, 4 … s, at most
``EDGE_PURGE_RETRY_BACKOFF_MAX``), for ``EDGE_PURGE_MAX_RETRIES`` attempts. ``sweep`` (beat,
every ``EDGE_PURGE_SWEEP_SECONDS``) sends every due row, whatever happened to its task.

What this replaced: a Celery task queued after commit was the only record of a purge, so a
broker down at that moment, or a worker killed holding the task (Redis keeps it unacked for
an hour), left pages stale for a day. A purge sent twice purges nothing the second time;
one never sent is a stale page, so at-least-once is the contract.
"""
import logging
from datetime import timedelta

from celery import shared_task
from django.conf import settings
from django.db import transaction
from django.utils import timezone

from publishing.transactions import OnCommit, pending_callback, register_callback

from . import purging
from .models import Purge

logger = logging.getLogger(__name__)

#: Rows one send locks and merges: the keys of hundreds of writes go out in a few requests.
BATCH = 500
SWEEP_BATCHES = 20
#: Where the open transaction's purge is kept on the connection (``publishing.transactions``).
PENDING = "edge_pending_purge"


class Pending(OnCommit):
    """This transaction's purge: its row and the keys written so far; on commit, its task is queued."""

    def __init__(self, keys: set[str]):
        self.keys = keys
        self.pk = Purge.objects.create(keys=sorted(keys)).pk

    def run(self) -> None:
        queue(self.pk)


def record(keys) -> None:
    """Purge `keys` once the current transaction commits (at once outside one), durably."""
    keys = set(keys)
    if not keys:
        return
    pending = pending_callback(PENDING)
    if pending is None:
        register_callback(PENDING, Pending(keys), robust=True)  # outside a transaction: runs now
    elif not keys <= pending.keys:
        pending.keys |= keys
        Purge.objects.filter(pk=pending.pk).update(keys=sorted(pending.keys))


@shared_task(name="edge.tasks.send_purge", acks_late=True, ignore_result=True)
def send_purge(purge_id: int) -> int:
    """Send one recorded purge (the fast path after its commit); the sweep covers whatever this misses.

    Defined here, beside what queues it, not in tasks.py: tasks.py imports this module, so
    queuing it from there would close a circle (and by name, inline mode would not run it).
    """
    return send([purge_id])


def queue(purge_id: int) -> None:
    try:
        send_purge.delay(purge_id)
    except Exception:  # kombu's OperationalError, socket errors: the row waits for the sweep
        logger.warning("Could not queue edge purge %s; the sweep will send it.", purge_id, exc_info=True)


def send_now(keys) -> int:
    """Record and send `keys` in this process (a worker's own purges: scheduled publication, old messages)."""
    keys = set(keys)
    if not keys:
        return 0
    return send([Purge.objects.create(keys=sorted(keys)).pk])


def send(purge_ids: list[int] | None = None, now=None) -> int:
    """Send these purges (None: the due ones, a batch), merged per target set; returns how many were confirmed."""
    now = now or timezone.now()
    with transaction.atomic():
        rows = Purge.objects.select_for_update(skip_locked=True)
        rows = list(rows.filter(pk__in=purge_ids) if purge_ids is not None else rows.due(now)[:BATCH])
        groups: dict[tuple[str, ...], list[Purge]] = {}
        for row in rows:
            groups.setdefault(tuple(row.targets or ()), []).append(row)
        backend, confirmed = purging.backend(), 0
        for targets, group in groups.items():
            failed = backend.purge(set().union(*(row.keys for row in group)), list(targets) or None)
            if failed:
                retry_later(group, failed, now)
            else:
                Purge.objects.filter(pk__in=[row.pk for row in group]).delete()
                confirmed += len(group)
    return confirmed


def retry_later(rows: list[Purge], failed: list[str], now) -> None:
    """Keep the rows for the nodes that failed, due again after their backoff; give up after the last try."""
    given_up = [row.pk for row in rows if row.attempts + 1 >= settings.EDGE_PURGE_MAX_RETRIES]
    if given_up:
        logger.error("Gave up purging %s row(s) from the edge after %s attempts: %s failed.", len(given_up),
                     settings.EDGE_PURGE_MAX_RETRIES, ", ".join(failed))
        Purge.objects.filter(pk__in=given_up).delete()
    for row in rows:
        row.attempts += 1
        row.targets, row.last_error = sorted(failed), f"Failed at {', '.join(sorted(failed))}"[:500]
        row.next_attempt_at = now + timedelta(seconds=backoff(row.attempts))
    Purge.objects.bulk_update([row for row in rows if row.pk not in given_up],
                              ["attempts", "targets", "last_error", "next_attempt_at"])


def backoff(attempts: int) -> int:
    return min(2 ** (attempts - 1), settings.EDGE_PURGE_RETRY_BACKOFF_MAX)


def sweep(now=None) -> int:
    """Send every due purge, a batch at a time (at most SWEEP_BATCHES); returns how many the edge confirmed.

    Rows another worker holds are skipped, and failed ones are no longer due, so this ends."""
    confirmed = 0
    for _ in range(SWEEP_BATCHES):
        if not Purge.objects.due(now).exists():
            break
        confirmed += send(now=now)
    return confirmed
