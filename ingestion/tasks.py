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

from publishing import queues

from . import deliveries, drafting, feeds, polling, redelivery
from .models import FeedSource, TrackedRepository

logger = logging.getLogger(__name__)

TASK_OPTIONS = {"acks_late": True, "max_retries": 5}
#: What a delivery's or a feed fetch's task id names (``publishing.queues``): sweeps look for them in the queue.
DELIVERY_WORK = "webhook-delivery"
FEED_WORK = "feed-fetch"


def backoff(task) -> int:
    """Seconds before the next retry: 30, 60, 120 … capped at ten minutes."""
    return min(30 * 2**task.request.retries, 600)


@shared_task(**TASK_OPTIONS)
def process_delivery_task(delivery_id: int, force: bool = False) -> str:
    """Process one delivery. A failure is recorded with its next try (``retry_at``), which the sweep queues:
    a Celery countdown would live only in the worker that held it, and die with it."""
    try:
        delivery = deliveries.process_delivery(delivery_id, force=force)
    except Exception as exc:
        logger.warning("Delivery %s failed; the sweep tries it again at its retry_at.", delivery_id, exc_info=True)
        return f"failed, tried again by the sweep: {type(exc).__name__}"
    return delivery.state if delivery else "skipped"


@shared_task(**TASK_OPTIONS)
def sweep_deliveries() -> int:
    """Queue deliveries whose task was lost (a worker killed holding it, Redis restarted, the broker down),
    and failed ones whose retry is due.

    Overdue (pending ``INGESTION_SWEEP_AFTER`` after they arrived, or failed with ``retry_at``
    passed) and not waiting in the queue, by identity (``publishing.queues``): a delivery still waiting behind a backlog is
    left alone, so a backlog never multiplies, and a lost one is queued by the next sweep
    whatever else is queued (counting the queue let beat's own tasks outnumber a lost
    delivery minute after minute: issue 25). Processing is idempotent, so the copy of a task a
    live worker is still running only finds its delivery done.
    """
    overdue = list(deliveries.pending_for_sweep(settings.INGESTION_SWEEP_AFTER).values_list("pk", flat=True))
    if not overdue:
        return 0
    in_queue = queues.waiting(process_delivery_task.app, DELIVERY_WORK) or set()
    lost = [delivery_id for delivery_id in overdue if str(delivery_id) not in in_queue]
    for delivery_id in lost:
        queue_delivery(delivery_id)
    return len(lost)


def queue_delivery(delivery_id: int, **options) -> None:
    """Send ``process_delivery_task`` with an id the sweep recognises in the queue (argsrepr/kwargsrepr:
    what the worker logs, given so Celery need not saferepr() the arguments)."""
    process_delivery_task.apply_async((delivery_id,), task_id=queues.task_id(DELIVERY_WORK, delivery_id),
                                      argsrepr=f"({delivery_id},)", kwargsrepr="{}", **options)


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

    A queued feed is claimed for ``FeedSource.FETCH_CLAIM``: the next sweeps leave it alone
    while its fetch waits or runs, and the fetch then sets its next time. A fetch lost with a
    killed worker is queued again by the first sweep after the claim (it used to wait the
    hour of the interval); one still waiting in the queue behind a backlog never is
    (``publishing.queues``).
    """
    due = list(FeedSource.objects.due().values_list("pk", flat=True))
    in_queue = (queues.waiting(fetch_feed.app, FEED_WORK) if due else None) or set()
    lost = [source_id for source_id in due if str(source_id) not in in_queue]
    FeedSource.objects.filter(pk__in=lost).update(next_attempt_at=timezone.now() + FeedSource.FETCH_CLAIM)
    for source_id in lost:
        queue_fetch(source_id)
    return len(lost)


@shared_task(**TASK_OPTIONS)
def fetch_all_feeds() -> int:
    """Queue a fetch of every enabled feed now, due or not."""
    ids = list(FeedSource.objects.filter(enabled=True).values_list("pk", flat=True))
    for source_id in ids:
        queue_fetch(source_id)
    return len(ids)


def queue_fetch(source_id: int) -> None:
    """Send ``fetch_feed`` with an id the sweep recognises in the queue."""
    fetch_feed.apply_async((source_id,), task_id=queues.task_id(FEED_WORK, source_id))
