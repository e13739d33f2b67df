"""The GitHub webhook endpoint: verify, store, answer; processing happens in a task."""
import json
import logging

import orjson
from django.conf import settings
from django.db import DatabaseError
from django.http import JsonResponse
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_POST

from . import webhooks

logger = logging.getLogger(__name__)
#: Seconds a client is asked to wait when the database is down (GitHub itself does not retry; see below).
RETRY_AFTER_SECONDS = 60
# GitHub caps payloads at 25 MB; Django's 2.5 MB DATA_UPLOAD_MAX_MEMORY_SIZE would refuse big pushes.
MAX_BODY_BYTES = 25 * 1024 * 1024


def _error(status: int, message: str) -> JsonResponse:
    return JsonResponse({"error": message}, status=status)


def _parse(request, body: bytes) -> dict | JsonResponse:
    """The JSON object of a verified request, or the 4xx response explaining why not."""
    if request.content_type != "application/json":
        return _error(415, "Set the webhook's content type to application/json.")
    try:
        payload = _loads(body)
    except (UnicodeDecodeError, ValueError):
        return _error(400, "The body is not valid JSON.")
    if not isinstance(payload, dict):
        return _error(400, "The body must be a JSON object.")
    return payload


def _loads(body: bytes):
    """orjson (several times faster on a 30 KB payload); the standard library for what orjson refuses.

    GitHub sends UTF-8 JSON, which orjson reads. json also takes UTF-16/32,
    NaN and integers beyond 64 bits: those still parse, just slower.
    """
    try:
        return orjson.loads(body)
    except orjson.JSONDecodeError:
        return json.loads(body)


@csrf_exempt
@require_POST
def github_webhook(request):
    """Accept a signed GitHub delivery: 202 when stored and queued, 200 for a redelivery, 503 if it cannot be stored."""
    signature = request.headers.get("X-Hub-Signature-256", "")
    if not signature:
        return _error(401, "Missing X-Hub-Signature-256 header.")
    secret = settings.GITHUB_WEBHOOK_SECRET
    if not secret:
        return _error(403, "This site has no webhook secret configured; it accepts no deliveries.")
    body = request.read(MAX_BODY_BYTES + 1)  # the stream, not request.body: see MAX_BODY_BYTES
    if len(body) > MAX_BODY_BYTES:
        return _error(413, "The body is larger than GitHub's 25 MB limit.")
    if not webhooks.signature_matches(secret, body, signature):
        return _error(403, "X-Hub-Signature-256 does not match the body.")
    guid, event = request.headers.get("X-GitHub-Delivery", ""), request.headers.get("X-GitHub-Event", "")
    if not guid or not event:
        return _error(400, "Missing X-GitHub-Delivery or X-GitHub-Event header.")
    payload = _parse(request, body)
    if isinstance(payload, JsonResponse):
        return payload
    try:
        delivery, created = webhooks.store_delivery(guid[:100], event, payload, request.headers, body)
    except DatabaseError:
        return _database_down(guid)
    status = "queued" if created else "duplicate"
    return JsonResponse({"delivery": delivery.guid, "status": status}, status=202 if created else 200)


def _database_down(guid: str) -> JsonResponse:
    """503 when the delivery could not be stored: we answer 2xx only for what we hold.

    GitHub records the failure and does not retry by itself; the
    ``redeliver_failed_deliveries`` beat task asks it to redeliver once the
    database is back (ingestion/redelivery.py).
    """
    logger.warning("Delivery %s refused with 503: the database is unavailable.", guid, exc_info=True)
    response = _error(503, "The delivery could not be stored; it will be requested again.")
    response["Retry-After"] = str(RETRY_AFTER_SECONDS)
    return response
