"""Celery tasks of the edge: purges (retried until the edge answers) and the scheduled-publication sweep.

A purge that fails is retried with exponential backoff (1, 2, 4 ... s, at most
``EDGE_PURGE_RETRY_BACKOFF_MAX``) up to ``EDGE_PURGE_MAX_RETRIES`` times (days, by
default): a purge lost means a stale page for ``EDGE_S_MAXAGE``. A retry goes
only to the targets (Varnish nodes) that failed; purging twice is harmless.
"""
from celery import shared_task
from django.conf import settings

from . import purging, scheduling

TASK_OPTIONS = {"acks_late": True, "ignore_result": True}
EAGER_RETRIES = 3


def backoff(retries: int) -> int:
    return min(2**retries, settings.EDGE_PURGE_RETRY_BACKOFF_MAX)


@shared_task(bind=True, max_retries=None, **TASK_OPTIONS)
def purge_keys(self, keys: list[str], targets: list[str] | None = None) -> int:
    """Purge surrogate `keys` from every edge node (or from the `targets` that failed last time)."""
    failed = purging.backend().purge(keys, targets)
    retry_failed(self, failed, keys=keys)
    return len(keys)


@shared_task(bind=True, max_retries=None, **TASK_OPTIONS)
def purge_urls(self, paths: list[str], targets: list[str] | None = None) -> int:
    """Purge these pages (paths) from every edge node."""
    failed = purging.backend().purge_urls(paths, targets)
    retry_failed(self, failed, paths=paths)
    return len(paths)


def retry_failed(task, failed: list[str], **arguments) -> None:
    if not failed:
        return
    # Run inline (no broker: development, ``apply()``), retries come at once, not after a backoff: a few only.
    limit = settings.EDGE_PURGE_MAX_RETRIES
    if task.request.is_eager:
        limit = min(limit, EAGER_RETRIES)
    if task.request.retries >= limit:
        raise purging.PurgeRefused(f"Gave up purging {arguments} at {failed}")
    raise task.retry(kwargs={**arguments, "targets": failed}, countdown=backoff(task.request.retries))


@shared_task(**TASK_OPTIONS)
def purge_published(label: str, pk: int) -> int:
    """At a scheduled post's or digest's time: purge its pages and listings, if it is live by then."""
    keys = scheduling.keys_if_live(label, pk)
    if keys:
        purge_keys.delay(sorted(keys))
    return len(keys)


@shared_task(**TASK_OPTIONS)
def sweep_scheduled() -> int:
    """Beat, every ``EDGE_SCHEDULE_SWEEP_SECONDS``: purge what scheduled publication just made visible."""
    keys = scheduling.sweep()
    if keys:
        purge_keys.delay(sorted(keys))
    return len(keys)
