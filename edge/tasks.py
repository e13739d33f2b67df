"""Celery tasks of the edge: purges (durable rows sent until the edge confirms) and the scheduled-publication sweep.

A purge is a row (``edge.models.Purge``) written with the write that needs it
(``edge.outbox``); ``send_purge`` (defined in outbox.py, imported here so every worker
registers it) sends it after the commit, and ``sweep_purges`` (beat) sends every due row,
retries included: exponential backoff (1, 2, 4 ... s, at most
``EDGE_PURGE_RETRY_BACKOFF_MAX``) for ``EDGE_PURGE_MAX_RETRIES`` attempts, only to the nodes
that failed. A purge lost means a stale page for ``EDGE_S_MAXAGE``; purging twice is harmless.
"""
from celery import shared_task

from . import outbox, purging, scheduling
from .outbox import send_purge

__all__ = ["purge_keys", "purge_published", "purge_urls", "send_purge", "sweep_purges", "sweep_scheduled"]

TASK_OPTIONS = {"acks_late": True, "ignore_result": True}


@shared_task(**TASK_OPTIONS)
def sweep_purges() -> int:
    """Beat, every ``EDGE_PURGE_SWEEP_SECONDS``: send every due purge (lost tasks, retries after failures)."""
    return outbox.sweep()


@shared_task(**TASK_OPTIONS)
def purge_keys(keys: list[str], targets: list[str] | None = None) -> int:
    """Purge surrogate `keys` now, durably (a row, retried by the sweep until the edge confirms it).

    Kept for messages queued before purges became rows; new code records with ``outbox.record``."""
    outbox.send_now(keys)
    return len(keys)


@shared_task(bind=True, max_retries=None, **TASK_OPTIONS)
def purge_urls(self, paths: list[str], targets: list[str] | None = None) -> int:
    """Purge these pages (paths) from every edge node (``purge_edge --url`` does it in-process)."""
    failed = purging.backend().purge_urls(paths, targets)
    if failed:
        raise self.retry(kwargs={"paths": paths, "targets": failed}, countdown=outbox.backoff(self.request.retries + 1))
    return len(paths)


@shared_task(**TASK_OPTIONS)
def purge_published(label: str, pk: int) -> int:
    """At a scheduled post's or digest's time: purge its pages and listings, if it is live by then."""
    keys = scheduling.keys_if_live(label, pk)
    outbox.send_now(keys)
    return len(keys)


@shared_task(**TASK_OPTIONS)
def sweep_scheduled() -> int:
    """Beat, every ``EDGE_SCHEDULE_SWEEP_SECONDS``: purge what scheduled publication just made visible."""
    keys = scheduling.sweep()
    outbox.send_now(keys)
    return len(keys)
