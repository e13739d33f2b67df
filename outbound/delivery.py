"""Sending messages to endpoints: one HTTP POST per attempt, retried on the specification's schedule.

Order: each endpoint gets its messages oldest first. Only the oldest pending delivery of an
endpoint is ever tried; the ones behind it wait, so a receiver that was down gets everything in
order once it is back. A message that exhausts the schedule (8 attempts over about 28 hours) is
marked failed and the next one starts.

Durability: every pending delivery has ``next_attempt_at`` in the database. A Celery task per
endpoint does the work (queued after commit, and again with a countdown for the next retry), and
the beat sweep (`sweep`, every 30 s) re-enqueues every endpoint whose oldest pending delivery is due, so a due
retry survives a worker or Redis restart.

Never twice: the endpoint row is locked (``SELECT … FOR UPDATE SKIP LOCKED``) while one of its
deliveries is tried, and a delivery is tried only while its row says pending; the 2xx is
recorded in the same transaction.
"""
import json
import logging
import random
import time
from datetime import timedelta

import httpx
from celery import shared_task
from django.conf import settings
from django.db import transaction
from django.utils import timezone

from publishing import queues

from . import signing
from .addresses import RefusedAddress, check_endpoint_url, client
from .models import TEST_EVENT, Attempt, Delivery, Endpoint, Message

logger = logging.getLogger(__name__)

#: Standard Webhooks' suggested schedule: the delay before each retry (the first try is immediate).
RETRY_DELAYS = [timedelta(seconds=5), timedelta(minutes=5), timedelta(minutes=30), timedelta(hours=2),
                timedelta(hours=5), timedelta(hours=10), timedelta(hours=10)]
#: Up to this share of a delay is added at random, so retries of many endpoints do not arrive together.
JITTER = 0.1
DISABLE_AFTER = timedelta(days=5)
TIMEOUT_SECONDS = 15.0
EXCERPT_CHARS = 1000
#: Retries due sooner than this also get a countdown task; the sweep (every 30 s) catches the rest.
COUNTDOWN_LIMIT = timedelta(minutes=10)


#: What an endpoint's delivery task id names (``publishing.queues``): the sweep looks for it in the queue.
ENDPOINT_WORK = "outbound-endpoint"


@shared_task(name="outbound.tasks.deliver_endpoint_task", acks_late=True)
def deliver_endpoint_task(endpoint_id: int) -> int:
    """Deliver an endpoint's due messages in order; the attempts record their own failures, so no retry here.

    Defined here, beside what queues it, not in tasks.py: ``events`` queues it through
    ``fan_out`` and tasks.py imports ``events`` for the sweep, so tasks.py would close a
    circle. Queuing it by name instead hid the arrow and, where tasks run inline (``make
    run``, a shell), sent it to a broker nobody reads (issue 25). Its name is the one it
    always had, so messages already queued still find it.
    """
    return deliver_due(endpoint_id)


def enqueue(endpoint_id: int, countdown: float | None = None) -> None:
    """Queue the endpoint's delivery task; with the broker down, the sweep queues it once it is back.

    Called after the commit that made the delivery due, which must not fail for it: the row
    is the durable part (``next_attempt_at``), the task only the fast path.
    """
    try:
        deliver_endpoint_task.apply_async((endpoint_id,), countdown=countdown,
                                          task_id=queues.task_id(ENDPOINT_WORK, endpoint_id))
    except Exception:  # kombu's OperationalError, socket errors: whatever the broker throws
        logger.warning("Could not queue outbound delivery to endpoint %s; the sweep will.", endpoint_id,
                       exc_info=True)


def fan_out(message: Message) -> list[Delivery]:
    """A pending delivery of `message` to every endpoint that wants it, queued once this transaction commits."""
    endpoints = list(Endpoint.objects.wanting(message.type).values_list("pk", flat=True))
    deliveries = Delivery.objects.bulk_create(
        [Delivery(endpoint_id=pk, message=message, next_attempt_at=message.created_at) for pk in endpoints])
    for pk in endpoints:
        transaction.on_commit(lambda pk=pk: enqueue(pk))
    return deliveries


def next_delay(attempt_count: int) -> timedelta | None:
    """The wait after the `attempt_count`-th failed attempt, jittered; None once the schedule is exhausted."""
    if attempt_count > len(RETRY_DELAYS):
        return None
    delay = RETRY_DELAYS[attempt_count - 1]
    return delay + delay * random.uniform(0, JITTER)


def head(endpoint: Endpoint) -> Delivery | None:
    """The endpoint's oldest pending delivery: the only one that may be tried."""
    return endpoint.deliveries.pending().select_related("message").order_by("message_id").first()


def deliver_due(endpoint_id: int, now=None, http: httpx.Client | None = None) -> int:
    """Try the endpoint's due deliveries, oldest first, until one fails or is not due. Returns the 2xx count.

    `now` (default: the clock) decides what is due, so tests drive the schedule with a clock of their own.
    After a failed attempt a retry due within COUNTDOWN_LIMIT is queued with a countdown (the fast
    path); later ones are left to the sweep (Redis redelivers countdown tasks older than its
    visibility timeout, and a call that attempted nothing queues nothing, so tasks never pile up).
    """
    delivered = attempted = 0
    while True:
        outcome, next_due = deliver_head(endpoint_id, now, http)
        delivered += outcome is True
        attempted += outcome is not None
        if next_due is None or next_due > (now or timezone.now()):
            break
    if attempted and next_due is not None and not settings.CELERY_TASK_ALWAYS_EAGER:
        wait = (next_due - timezone.now()).total_seconds()
        if wait <= COUNTDOWN_LIMIT.total_seconds():
            enqueue(endpoint_id, countdown=max(wait, 0))
    return delivered


def deliver_head(endpoint_id: int, now=None, http=None) -> tuple[bool | None, object]:
    """One attempt at the endpoint's head delivery: (whether it got a 2xx, None if nothing was tried;
    when the next head is due, or None)."""
    with transaction.atomic():
        endpoint = Endpoint.objects.select_for_update(skip_locked=True).filter(pk=endpoint_id, enabled=True).first()
        if endpoint is None:
            return None, None  # disabled, deleted, or another worker holds it
        delivery = head(endpoint)
        moment = now or timezone.now()
        if delivery is None or delivery.next_attempt_at > moment:
            return None, delivery.next_attempt_at if delivery else None
        attempt = post(endpoint, delivery.message, delivery.attempt_count + 1, moment, http)
        record(endpoint, delivery, attempt, moment)
        following = head(endpoint) if endpoint.enabled else None
        return attempt.succeeded, following.next_attempt_at if following else None


def post(endpoint: Endpoint, message: Message, number: int, moment, http=None) -> Attempt:
    """POST the message, signed now; the answer (or the error) as an unsaved Attempt."""
    body = serialised(message)
    stamp = int(time.time())
    headers = signing.headers(endpoint.signing_secrets(moment), message.msg_id, stamp, body)
    attempt = Attempt(endpoint=endpoint, message=message, number=number, attempted_at=moment)
    started = time.monotonic()
    try:
        check_endpoint_url(endpoint.url)
        with http_client(http) as session:
            response = session.post(endpoint.url, content=body.encode(), headers=headers)
        attempt.status_code = response.status_code
        attempt.response_excerpt = response.text[:EXCERPT_CHARS]
        attempt.succeeded = 200 <= response.status_code < 300
    except RefusedAddress as exc:
        attempt.error = f"Refused address: {exc}"[:500]
    except (httpx.HTTPError, httpx.InvalidURL, OSError, ValueError) as exc:  # an answer never came: retried
        attempt.error = f"{type(exc).__name__}: {exc}"[:500]
    attempt.duration_ms = int((time.monotonic() - started) * 1000)
    return attempt


class http_client:
    """The given client (tests), or a fresh egress client with the 15 s timeout and no redirects."""

    def __init__(self, given):
        self.given = given

    def __enter__(self):
        self.own = None if self.given else client(timeout=TIMEOUT_SECONDS, follow_redirects=False)
        return self.given or self.own

    def __exit__(self, *exc):
        if self.own is not None:
            self.own.close()


def serialised(message: Message) -> str:
    return json.dumps(message.payload, separators=(",", ":"), ensure_ascii=False)


def record(endpoint: Endpoint, delivery: Delivery, attempt: Attempt, moment):
    """Save the attempt and its consequences: success, the next retry, giving up, disabling the endpoint."""
    attempt.save()
    delivery.attempt_count = attempt.number
    if attempt.succeeded:
        delivery.state, delivery.succeeded_at, delivery.next_attempt_at = Delivery.State.SUCCEEDED, moment, None
        delivery.save()
        if endpoint.failing_since is not None:
            Endpoint.objects.filter(pk=endpoint.pk).update(failing_since=None)
        return
    delay = next_delay(attempt.number)
    if delay is None:
        delivery.state, delivery.next_attempt_at = Delivery.State.FAILED, None
    else:
        delivery.next_attempt_at = moment + delay
    delivery.save()
    note_failure(endpoint, attempt, moment)


def note_failure(endpoint: Endpoint, attempt: Attempt, moment) -> None:
    """410 Gone disables at once; so does failing without a single success for 5 days."""
    if endpoint.failing_since is None:
        endpoint.failing_since = moment
        Endpoint.objects.filter(pk=endpoint.pk).update(failing_since=moment)
    if attempt.status_code == 410:
        endpoint.disable(f"The endpoint answered 410 Gone on {moment:%Y-%m-%d %H:%M} UTC.")
    elif moment - endpoint.failing_since >= DISABLE_AFTER:
        endpoint.disable(f"Every attempt failed for 5 days (since {endpoint.failing_since:%Y-%m-%d %H:%M} UTC); "
                         f"last: {attempt.status_code or attempt.error}.")


def sweep(now=None) -> int:
    """Queue every enabled endpoint whose oldest pending delivery is due (the durable path); returns how many.

    Not an endpoint whose task already waits in the queue (``publishing.queues``): in a
    backlog, a sweep every 30 s would otherwise add a message per endpoint each time.
    """
    due = list(Endpoint.objects.with_head_due(now or timezone.now()).values_list("pk", flat=True))
    in_queue = queues.waiting(deliver_endpoint_task.app, ENDPOINT_WORK) if due else set()
    lost = [endpoint_id for endpoint_id in due if str(endpoint_id) not in (in_queue or set())]
    for endpoint_id in lost:
        enqueue(endpoint_id)
    return len(lost)


def retry_now(deliveries) -> int:
    """Make these pending or failed deliveries due now (admin "retry now"); succeeded ones are left alone."""
    now = timezone.now()
    endpoints = set(deliveries.exclude(state=Delivery.State.SUCCEEDED).values_list("endpoint_id", flat=True))
    count = deliveries.exclude(state=Delivery.State.SUCCEEDED).update(state=Delivery.State.PENDING,
                                                                       next_attempt_at=now)
    for endpoint_id in endpoints:
        transaction.on_commit(lambda pk=endpoint_id: enqueue(pk))
    return count


def replay(endpoint: Endpoint, messages) -> int:
    """Send these messages to `endpoint` again, even those it acknowledged: an operator's explicit request."""
    now = timezone.now()
    count = 0
    for message in messages.filter(created_at__lte=now).order_by("pk"):
        if endpoint.event_types and message.type not in endpoint.event_types:
            continue
        Delivery.objects.update_or_create(endpoint=endpoint, message=message, defaults={
            "state": Delivery.State.PENDING, "next_attempt_at": now, "attempt_count": 0, "succeeded_at": None})
        count += 1
    transaction.on_commit(lambda: enqueue(endpoint.pk))
    return count


def send_test(endpoint: Endpoint) -> Message:
    """A ``webhook.test`` message to this endpoint only."""
    message = Message.objects.create(type=TEST_EVENT, payload={
        "type": TEST_EVENT, "timestamp": timezone.now().isoformat().replace("+00:00", "Z"),
        "data": {"endpoint": endpoint.pk, "note": "A test event sent from the RepoJournal admin."}})
    Delivery.objects.create(endpoint=endpoint, message=message, next_attempt_at=message.created_at)
    transaction.on_commit(lambda: enqueue(endpoint.pk))
    return message
