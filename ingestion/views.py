"""The GitHub webhook endpoint: verify, store, answer; processing happens in a task."""
import json

from django.conf import settings
from django.http import JsonResponse
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_POST

from . import webhooks


def _error(status: int, message: str) -> JsonResponse:
    return JsonResponse({"error": message}, status=status)


def _parse(request) -> dict | JsonResponse:
    """The JSON object of a verified request, or the 4xx response explaining why not."""
    if request.content_type != "application/json":
        return _error(415, "Set the webhook's content type to application/json.")
    try:
        payload = json.loads(request.body)
    except (UnicodeDecodeError, ValueError):
        return _error(400, "The body is not valid JSON.")
    if not isinstance(payload, dict):
        return _error(400, "The body must be a JSON object.")
    return payload


@csrf_exempt
@require_POST
def github_webhook(request):
    """Accept a signed GitHub delivery: 202 when stored and queued, 200 for a redelivery."""
    signature = request.headers.get("X-Hub-Signature-256", "")
    if not signature:
        return _error(401, "Missing X-Hub-Signature-256 header.")
    secret = settings.GITHUB_WEBHOOK_SECRET
    if not secret or not webhooks.signature_matches(secret, request.body, signature):
        return _error(403, "X-Hub-Signature-256 does not match the body.")
    guid, event = request.headers.get("X-GitHub-Delivery", ""), request.headers.get("X-GitHub-Event", "")
    if not guid or not event:
        return _error(400, "Missing X-GitHub-Delivery or X-GitHub-Event header.")
    payload = _parse(request)
    if isinstance(payload, JsonResponse):
        return payload
    delivery, created = webhooks.store_delivery(guid[:100], event, payload, request.headers, request.body)
    status = "queued" if created else "duplicate"
    return JsonResponse({"delivery": delivery.guid, "status": status}, status=202 if created else 200)
