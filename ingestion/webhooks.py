"""GitHub webhook deliveries: verify, store, then process into References.

The endpoint only verifies and stores (GitHub gives up after 10 seconds); a
Celery task queued on commit does the processing. A delivery is processed at
most once: processing locks the row and skips anything already done, so the
periodic sweep and a retried task can never double an import.
"""
import datetime
import hashlib
import hmac
import logging
import os

from django.db import transaction
from django.utils import timezone
from kombu.pools import ProducerPool, producers

from . import broker
from .importers import Counts, push_commit_fields, upsert_commit, upsert_issue, upsert_pull_request, upsert_release
from .models import IngestionRun, TrackedRepository, WebhookDelivery

logger = logging.getLogger(__name__)

State = WebhookDelivery.State
STORED_HEADERS = ("X-GitHub-Event", "X-GitHub-Delivery", "X-GitHub-Hook-ID", "X-GitHub-Hook-Installation-Target-ID",
                  "X-GitHub-Hook-Installation-Target-Type", "X-Hub-Signature-256", "User-Agent", "Content-Type")
PULL_REQUEST_ACTIONS = {"opened", "edited", "labeled", "unlabeled", "reopened", "synchronize", "closed"}
ISSUE_ACTIONS = {"opened", "closed"}
ZERO_SHA = "0" * 40
# Give up on an unreachable broker within about a second: GitHub waits only 10 s for our answer.
FAIL_FAST = {"max_retries": 1, "interval_start": 0, "interval_step": 0.2, "interval_max": 0.2,
             "connect_retries_timeout": 1}
_PRODUCER_POOLS: dict[tuple[int, str], ProducerPool] = {}


def signature_matches(secret: str, body: bytes, header: str) -> bool:
    """Check ``X-Hub-Signature-256``: HMAC-SHA256 of the raw body, compared in constant time."""
    expected = "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()
    return hmac.compare_digest(expected.encode(), header.encode())


def store_delivery(guid: str, event: str, payload: dict, headers, body: bytes) -> tuple[WebhookDelivery, bool]:
    """Store a verified delivery once per GUID and queue it after commit; returns (delivery, created).

    A redelivery (same GUID) returns the stored row and queues nothing. The
    unique GUID decides, so a new delivery -- nearly every one -- costs a single
    INSERT: no SELECT first, no transaction of its own, and no savepoint inside
    a caller's (see ``WebhookDeliveryQuerySet.insert_new``).
    """
    fields = {
        "guid": guid,
        "event": event[:50],
        "action": str(payload.get("action") or "")[:50],
        "repository_full_name": str((payload.get("repository") or {}).get("full_name") or "")[:140],
        "headers": {name: headers[name] for name in STORED_HEADERS if name in headers},
        "body": body,
        "received_at": timezone.now(),
    }
    delivery_id = WebhookDelivery.objects.insert_new(**fields)
    if delivery_id is None:  # a redelivery, or the same GUID stored a moment ago by another request
        return WebhookDelivery.objects.get(guid=guid), False
    transaction.on_commit(lambda: enqueue(delivery_id), robust=True)  # at once when not in a transaction
    delivery = WebhookDelivery(pk=delivery_id, **fields)
    delivery._state.adding, delivery._state.db = False, WebhookDelivery.objects.db  # as if loaded: it is stored
    return delivery, True


def enqueue(delivery_id: int) -> None:
    """Send the processing task; if the broker is down the delivery stays pending for the sweep.

    The delivery is already committed, so GitHub still gets its 2xx: failing
    here would only make GitHub report an error for data we hold.
    """
    from .tasks import process_delivery_task

    try:
        with broker_producers(process_delivery_task.app).acquire(block=True, timeout=1) as producer:
            # argsrepr/kwargsrepr: what the worker logs, given so Celery need not saferepr() the arguments.
            process_delivery_task.apply_async((delivery_id,), producer=producer, retry=False,
                                              argsrepr=f"({delivery_id},)", kwargsrepr="{}",
                                              **broker.publish_options(producer))
    except Exception:  # kombu's OperationalError, socket errors: whatever the broker throws
        logger.warning("Could not queue delivery %s; the sweep will process it.", delivery_id, exc_info=True)


def broker_producers(app) -> ProducerPool:
    """This process's pool of producers on fail-fast broker connections, kept open between requests.

    Connecting to the broker for every delivery cost more than the rest of the
    request. The pool is kombu's (keyed by broker URL and transport options);
    remembering it per process and broker URL also saves building a Connection
    per request just to look it up. A pooled connection that failed
    reconnects, within ``FAIL_FAST``, on its next use. A plain ``redis://``
    broker is reached through ``ingestion.broker.Transport`` (kombu's, without
    a new redis-py client per publish).
    """
    url = app.conf.broker_write_url
    key = (os.getpid(), url)  # a forked worker must not share its parent's sockets
    pool = _PRODUCER_POOLS.get(key)
    if pool is None:
        transport = broker.Transport if url.startswith("redis://") else None
        connection = app.connection_for_write(transport=transport, transport_options=FAIL_FAST)
        pool = _PRODUCER_POOLS[key] = producers[connection]
    return pool


def pending_for_sweep(older_than_seconds: int):
    """Pending deliveries that should have been processed by now (their task was lost or never sent)."""
    cutoff = timezone.now() - datetime.timedelta(seconds=older_than_seconds)
    return WebhookDelivery.objects.filter(state=State.PENDING, received_at__lte=cutoff)


def process_delivery(delivery_id: int, *, force: bool = False) -> WebhookDelivery | None:
    """Process one stored delivery into References, recording an IngestionRun.

    Skips deliveries already processed or ignored unless ``force`` (the admin's
    "reprocess"); failures are recorded on the delivery and re-raised so the
    task can retry.
    """
    try:
        with transaction.atomic():
            delivery = WebhookDelivery.objects.select_for_update().filter(pk=delivery_id).first()
            if delivery is None or (not force and delivery.state in (State.PROCESSED, State.IGNORED)):
                return None
            state, detail, counts = handle(delivery)
            _record(delivery, state, detail, counts)
            return delivery
    except Exception as exc:
        delivery = WebhookDelivery.objects.get(pk=delivery_id)
        _record(delivery, State.FAILED, f"{type(exc).__name__}: {exc}", Counts())
        raise


def _record(delivery: WebhookDelivery, state: str, detail: str, counts: Counts) -> None:
    delivery.attempts += 1
    delivery.finish(state, detail)
    run_status = {State.PROCESSED: "succeeded", State.IGNORED: "ignored", State.FAILED: "failed"}[state]
    IngestionRun.objects.create(
        source=IngestionRun.Source.WEBHOOK, subject=delivery.guid, delivery=delivery, status=run_status,
        finished_at=timezone.now(), error=detail if state == State.FAILED else "", **counts.as_dict(),
    )


def handle(delivery: WebhookDelivery) -> tuple[str, str, Counts]:
    """Dispatch on the event; returns (state, detail, counts)."""
    payload = delivery.payload()
    if delivery.event == "ping":
        return State.PROCESSED, f"ping from hook {payload.get('hook_id', '?')}: {payload.get('zen', '')}", Counts()
    handler = HANDLERS.get(delivery.event)
    if handler is None:
        return State.IGNORED, f"event “{delivery.event}” is not handled", Counts()
    tracked = TrackedRepository.objects.for_full_name(delivery.repository_full_name)
    if tracked is None:
        return State.IGNORED, f"repository “{delivery.repository_full_name}” is not tracked", Counts()
    return handler(tracked, payload)


def _ignored(detail: str) -> tuple[str, str, Counts]:
    return State.IGNORED, detail, Counts()


def _one(outcome: str) -> tuple[str, str, Counts]:
    counts = Counts()
    counts.add(outcome)
    return State.PROCESSED, outcome, counts


def handle_pull_request(tracked: TrackedRepository, payload: dict):
    if payload.get("action") not in PULL_REQUEST_ACTIONS:
        return _ignored(f"pull_request action “{payload.get('action')}” is not handled")
    return _one(upsert_pull_request(tracked.repository, payload["pull_request"]))


def handle_issues(tracked: TrackedRepository, payload: dict):
    if payload.get("action") not in ISSUE_ACTIONS:
        return _ignored(f"issues action “{payload.get('action')}” is not handled")
    return _one(upsert_issue(tracked.repository, payload["issue"]))


def handle_release(tracked: TrackedRepository, payload: dict):
    if payload.get("action") != "published":
        return _ignored(f"release action “{payload.get('action')}” is not handled")
    return _one(upsert_release(tracked.repository, payload["release"]))


def handle_push(tracked: TrackedRepository, payload: dict):
    """Commits pushed to the default branch.

    Tag pushes and other branches are not ours; a deletion carries no commits,
    and a branch creation carries none that are new (its commits came with
    earlier pushes; the next poll reconciles anything else).
    """
    default_branch = payload["repository"].get("default_branch") or tracked.default_branch
    if payload.get("deleted") or payload.get("after") == ZERO_SHA:
        return _ignored(f"{payload.get('ref')} was deleted")
    if payload.get("created") or payload.get("before") == ZERO_SHA:
        return _ignored(f"{payload.get('ref')} was created: no new commits")
    if payload.get("ref") != f"refs/heads/{default_branch}":
        return _ignored(f"{payload.get('ref')} is not the default branch ({default_branch})")
    counts = Counts()
    for commit in payload.get("commits") or []:
        counts.add(upsert_commit(tracked.repository, push_commit_fields(commit)))
    return State.PROCESSED, f"{len(payload.get('commits') or [])} commit(s)", counts


HANDLERS = {
    "pull_request": handle_pull_request,
    "issues": handle_issues,
    "release": handle_release,
    "push": handle_push,
}
