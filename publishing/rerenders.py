"""Re-renders a rename owes, done by workers: a row written with the rename, run after its commit, swept.

Renaming an author redraws the card of every post they wrote; renaming a tag, a topic or a
repository re-renders every post or digest showing it. Done inside the save, that was about
30 ms a post: an author with 2,000 posts made a minute-long admin request, past gunicorn's
timeout. So the save only records what it owes (``record``): a row of the app's ``Rerender``
subclass, written in the writing transaction (a rolled-back rename owes nothing), and once the
transaction commits its task is queued (the fast path). The task claims the row for a lease
(``run``), re-renders, and deletes it; beat's sweep (``sweep``) queues again every row nobody
holds that has waited longer than ``SWEEP_AFTER`` -- a broker down at the commit, a worker killed
mid-way -- unless its task still waits in the queue behind a backlog (each task's id names its row:
``publishing.queues``), so a backlog does not pile up copies sweep after sweep. A row whose
re-render failed ``MAX_ATTEMPTS`` times is given up: logged as an error and left in its table
(``attempts`` at the cap) for an operator to look at; setting ``attempts`` back to 0 retries it. Re-rendering reads the current names, so running a row twice, or two rows of the same
author at once, is only work repeated: the pattern of the edge's purge outbox (``edge.outbox``).

The pages and og:image cards show the old name until the worker is done; the rows it re-renders
are announced (``publishing.signals.content_changed``), so the page cache and the edge follow.
"""
import logging
from datetime import timedelta

from django.db import models, transaction
from django.db.models import Q
from django.utils import timezone

from . import queues

logger = logging.getLogger(__name__)

#: How long a worker holds a row it runs; renewed after every batch (``Claim.renew``).
LEASE = timedelta(minutes=10)
#: A row older than this, and held by nobody, was lost (its task never ran, or died): the sweep queues it again.
SWEEP_AFTER = timedelta(seconds=60)
SWEEP_BATCH = 100
#: Runs of a row before it is given up (each failed run waits out its ``LEASE``: about an hour in all).
MAX_ATTEMPTS = 5


class Rerender(models.Model):
    """A re-render owed after a rename: ``kind`` names what was renamed ("author", "tag", "topic", "repository")."""

    kind = models.CharField(max_length=20)
    object_id = models.PositiveBigIntegerField()
    created_at = models.DateTimeField(default=timezone.now, db_index=True)
    claimed_until = models.DateTimeField(null=True, blank=True)
    attempts = models.PositiveIntegerField(default=0)

    class Meta:
        abstract = True

    def __str__(self) -> str:
        return f"re-render after {self.kind} {self.object_id} changed"


def record(model, kind: str, object_id: int, task) -> None:
    """Owe a re-render of what shows `kind` `object_id`: a row now, `task` (taking its id) after the commit."""
    pk = model.objects.create(kind=kind, object_id=object_id).pk
    transaction.on_commit(lambda: queue(model, task, pk), robust=True)


def work(model) -> str:
    """The kind of work in the ids of `model`'s tasks (``publishing.queues.task_id``): "postrerender"."""
    return model._meta.model_name


def queue(model, task, pk: int) -> bool:
    """Queue `task` for the row, with an id the sweep recognises in the queue; with the broker away the row
    waits for the sweep."""
    return queues.queue_or_leave_to_sweep(task, pk, task_id=queues.task_id(work(model), pk))


class Claim:
    """A row held by this worker until ``LEASE`` from the last renewal."""

    def __init__(self, model, row):
        self.model, self.row = model, row

    def renew(self) -> None:
        self.model.objects.filter(pk=self.row.pk).update(claimed_until=timezone.now() + LEASE)


def claim(model, pk: int):
    """The row, held for ``LEASE``, or None: done already, or another worker holds it."""
    now = timezone.now()
    free = Q(claimed_until__isnull=True) | Q(claimed_until__lt=now)
    held = model.objects.filter(free, pk=pk, attempts__lt=MAX_ATTEMPTS).update(
        claimed_until=now + LEASE, attempts=models.F("attempts") + 1)
    return Claim(model, model.objects.get(pk=pk)) if held else None


def run(model, pk: int, handlers: dict) -> bool:
    """Run the re-render row `pk` owes with ``handlers[kind](object_id, claim)``, then delete it.

    An exception leaves the row held until its lease ends; the sweep queues it again after that, up
    to ``MAX_ATTEMPTS`` runs: then it is logged as an error and kept, run by nobody."""
    held = claim(model, pk)
    if held is None:
        return False
    try:
        handlers[held.row.kind](held.row.object_id, held)
    except Exception:
        if held.row.attempts >= MAX_ATTEMPTS:
            logger.error("Gave up the %s (row %s of %s) after %s failed attempts; set its attempts to 0 to retry.",
                         held.row, pk, model._meta.label, held.row.attempts, exc_info=True)
        raise
    model.objects.filter(pk=pk).delete()
    return True


def sweep(model, task, now=None) -> int:
    """Queue again every row that has waited longer than ``SWEEP_AFTER``, that nobody holds, that is not
    given up, and whose task does not wait in the queue; returns how many."""
    now = now or timezone.now()
    lost = model.objects.filter(Q(claimed_until__isnull=True) | Q(claimed_until__lt=now),
                                created_at__lt=now - SWEEP_AFTER, attempts__lt=MAX_ATTEMPTS)
    pks = list(lost.order_by("pk").values_list("pk", flat=True)[:SWEEP_BATCH])
    if not pks:
        return 0
    in_queue = queues.waiting(task.app, work(model)) or set()
    pks = [pk for pk in pks if str(pk) not in in_queue]
    for pk in pks:
        queue(model, task, pk)
    return len(pks)
