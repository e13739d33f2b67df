"""Celery tasks: thin wrappers that take ids, load, and call the domain code.

Callers queue them after commit (``transaction.on_commit`` / ``delay_on_commit``)
so a worker never looks for a row that is not there yet. Tasks acknowledge late
and retry explicitly; the domain code is idempotent, so a repeat is harmless.
"""
import datetime
import logging

from celery import shared_task
from django.conf import settings
from django.utils import timezone

from . import deliveries, drafting, feeds, polling, redelivery
from .models import FeedSource, TrackedRepository

logger = logging.getLogger(__name__)

TASK_OPTIONS = {"acks_late": True, "max_retries": 5}


def backoff(task) -> int:
    """Seconds before the next retry: 30, 60, 120 … capped at ten minutes."""
    return min(30 * 2**task.request.retries, 600)


@shared_task(bind=True, **TASK_OPTIONS)
def process_delivery_task(self, delivery_id: int, force: bool = False) -> str:
    try:
        delivery = deliveries.process_delivery(delivery_id, force=force)
    except Exception as exc:
        raise self.retry(exc=exc, countdown=backoff(self))
    return delivery.state if delivery else "skipped"


@shared_task(**TASK_OPTIONS)
def sweep_deliveries() -> int:
    """Queue pending deliveries whose task never reached a worker (e.g. the broker was down).

    Not while the queue holds at least as many messages as there are overdue
    deliveries: in a backlog they are most likely still on their way, and queuing
    each again every sweep period multiplied the backlog (after a minute of
    64-connection load, tests/faults/test_load.py, the extra messages held up the
    next deliveries for over a minute). A delivery that really was lost is queued
    by the first sweep once the queue is shorter than the overdue list.
    """
    ids = list(deliveries.pending_for_sweep(settings.INGESTION_SWEEP_AFTER).values_list("pk", flat=True))
    if not ids or queued_messages() >= len(ids):
        return 0
    for delivery_id in ids:
        process_delivery_task.delay(delivery_id)
    return len(ids)


def queued_messages() -> int:
    """Messages waiting in the default queue (0 when tasks run inline, or when the broker cannot say)."""
    app = sweep_deliveries.app
    if app.conf.task_always_eager:
        return 0
    try:
        with app.connection_for_write() as connection:
            connection.ensure_connection(max_retries=1)
            return connection.default_channel.queue_declare(queue=app.conf.task_default_queue,
                                                            passive=True).message_count
    except Exception:  # kombu's OperationalError, socket errors: then sweep as before
        logger.warning("Could not read the queue's length; sweeping anyway.", exc_info=True)
        return 0


@shared_task(bind=True, **TASK_OPTIONS)
def redeliver_failed_deliveries(self) -> str:
    """Ask GitHub to redeliver what it failed to hand us (GitHub never retries); under the token's lock, like polls."""
    try:
        with polling.token_lock(settings.GITHUB_TOKEN):
            return str(redelivery.redeliver_all(polling.default_client()))
    except polling.TokenBusy as exc:
        raise self.retry(exc=exc, countdown=30)


@shared_task(**TASK_OPTIONS)
def dispatch_due_polls() -> int:
    """Queue a poll for every enabled repository whose interval has passed.

    Marking them as polled now keeps the next dispatch (a minute later) from
    queuing them again while their polls wait for the token.
    """
    due = TrackedRepository.objects.due()
    ids = list(due.values_list("pk", flat=True))
    TrackedRepository.objects.filter(pk__in=ids).update(last_polled_at=timezone.now())
    for tracked_id in ids:
        poll_repository.delay(tracked_id)
    return len(ids)


@shared_task(bind=True, **TASK_OPTIONS)
def poll_repository(self, tracked_id: int, since: str | None = None) -> str:
    """Poll one repository; one poll per token at a time, as GitHub asks (no concurrent requests)."""
    try:
        with polling.token_lock(settings.GITHUB_TOKEN):
            tracked = TrackedRepository.objects.select_related("repository").get(pk=tracked_id)
            since_at = datetime.datetime.fromisoformat(since) if since else None
            counts = polling.sync_repository(tracked, polling.default_client(), since=since_at)
    except polling.TokenBusy as exc:
        raise self.retry(exc=exc, countdown=30)
    except TrackedRepository.DoesNotExist:
        return "gone"
    except polling.GitHubError as exc:
        raise self.retry(exc=exc, countdown=backoff(self))
    return str(counts)


@shared_task(bind=True, **TASK_OPTIONS)
def draft_digest_task(self, topic_id: int, date: str) -> str:
    from digests.models import Topic

    topic = Topic.objects.get(pk=topic_id)
    return drafting.draft_digest(topic, datetime.date.fromisoformat(date)).summary()


@shared_task(**TASK_OPTIONS)
def fetch_feed(source_id: int) -> str:
    """Fetch one feed. A failure is not retried here: the source records it and the sweep
    (``fetch_due_feeds``) tries again after its backoff (``FeedSource.retry_delay``)."""
    try:
        return str(feeds.fetch_source(FeedSource.objects.get(pk=source_id)))
    except FeedSource.DoesNotExist:
        return "gone"
    except feeds.FeedRefused as exc:
        return f"refused: {exc}"  # recorded in the source's failed run; retrying cannot help
    except feeds.FeedError as exc:
        return f"failed: {exc}"


@shared_task(**TASK_OPTIONS)
def fetch_due_feeds() -> int:
    """Queue a fetch for every feed that is due (hourly, or its retry after a failure).

    Each queued feed's next attempt is moved an interval ahead at once, so the next sweep
    does not queue it again while the fetch waits for a worker; the fetch then sets it.
    """
    ids = list(FeedSource.objects.due().values_list("pk", flat=True))
    FeedSource.objects.filter(pk__in=ids).update(next_attempt_at=timezone.now() + FeedSource.FETCH_INTERVAL)
    for source_id in ids:
        fetch_feed.delay(source_id)
    return len(ids)


@shared_task(**TASK_OPTIONS)
def fetch_all_feeds() -> int:
    """Queue a fetch of every enabled feed now, due or not."""
    ids = list(FeedSource.objects.filter(enabled=True).values_list("pk", flat=True))
    for source_id in ids:
        fetch_feed.delay(source_id)
    return len(ids)
