"""GitHub webhook intake: verify a delivery, store it, queue its processing.

The endpoint only verifies and stores (GitHub gives up after 10 seconds); a
Celery task queued on commit does the processing (``ingestion.deliveries``).
"""
import hashlib
import hmac
import logging
import os

from django.db import transaction
from django.utils import timezone
from kombu.pools import ProducerPool, producers

from .models import WebhookDelivery
from .tasks import process_delivery_task, queue_delivery

logger = logging.getLogger(__name__)

STORED_HEADERS = ("X-GitHub-Event", "X-GitHub-Delivery", "X-GitHub-Hook-ID", "X-GitHub-Hook-Installation-Target-ID",
                  "X-GitHub-Hook-Installation-Target-Type", "X-Hub-Signature-256", "User-Agent", "Content-Type")
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
    try:
        with broker_producers(process_delivery_task.app).acquire(block=True, timeout=1) as producer:
            queue_delivery(delivery_id, producer=producer, retry=False)
    except Exception:  # kombu's OperationalError, socket errors: whatever the broker throws
        logger.warning("Could not queue delivery %s; the sweep will process it.", delivery_id, exc_info=True)


def broker_producers(app) -> ProducerPool:
    """This process's pool of producers on fail-fast broker connections, kept open between requests.

    Connecting to the broker for every delivery cost more than the rest of the
    request. The pool is kombu's (keyed by broker URL and transport options);
    remembering it per process and broker URL also saves building a Connection
    per request just to look it up. A pooled connection that failed
    reconnects, within ``FAIL_FAST``, on its next use.
    """
    url = app.conf.broker_write_url
    key = (os.getpid(), url)  # a forked worker must not share its parent's sockets
    pool = _PRODUCER_POOLS.get(key)
    if pool is None:
        connection = app.connection_for_write(transport_options=FAIL_FAST)
        pool = _PRODUCER_POOLS[key] = producers[connection]
    return pool
