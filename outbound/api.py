"""Webhook endpoints over the API: a token with the ``webhooks`` scope manages its user's own endpoints.

Another user's endpoint does not exist for the token (404). The secret is in the answer of the
create and rotate operations only; delivery, retries and the log are described in docs/webhooks.md.
"""
from django.db import transaction
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404
from ninja import Router
from ninja import Status as HttpStatus
from ninja.errors import HttpError

from accounts.models import ApiToken
from api.auth import token_auth
from api.errors import error_responses
from api.throttling import throttles
from api.writing import FieldProblems

from .addresses import RefusedAddress, check_endpoint_url
from .models import Endpoint
from .schemas import AttemptOut, EndpointId, EndpointIn, EndpointOut, EndpointPatch, EndpointWithSecretOut

router = Router(tags=["Webhooks"])

READ = {"auth": token_auth, "throttle": throttles("list")}
WRITE = {"auth": token_auth, "throttle": throttles("write")}
#: How many endpoints one user may have (the list is answered whole, unpaginated).
MAX_ENDPOINTS = 20


def owner(request: HttpRequest):
    token = request.auth
    if not token.has_scope(ApiToken.Scope.WEBHOOKS):
        raise HttpError(403, f"This operation needs a token with the “{ApiToken.Scope.WEBHOOKS.value}” scope.")
    return token.user


def own_endpoint(request: HttpRequest, endpoint_id: int, lock: bool = False) -> Endpoint:
    endpoints = Endpoint.objects.owned_by(owner(request))
    return get_object_or_404(endpoints.select_for_update() if lock else endpoints, pk=endpoint_id)


def check_url(url: str, problems: FieldProblems) -> None:
    try:
        check_endpoint_url(url)
    except RefusedAddress as exc:
        problems.add("body.url", str(exc))


@router.get("/webhooks/endpoints/", response={200: list[EndpointOut], **error_responses(401, 403)}, **READ)
def list_endpoints(request: HttpRequest):
    """Your endpoints (at most 20), oldest first."""
    return Endpoint.objects.owned_by(owner(request)).order_by("pk")


@router.post("/webhooks/endpoints/", response={201: EndpointWithSecretOut, **error_responses(401, 403)}, **WRITE)
def create_endpoint(request: HttpRequest, payload: EndpointIn):
    """Subscribe a URL; the answer carries its signing secret (``whsec_…``), shown only this once."""
    user = owner(request)
    problems = FieldProblems()
    check_url(payload.url, problems)
    if Endpoint.objects.owned_by(user).count() >= MAX_ENDPOINTS:
        problems.add("body", f"You already have {MAX_ENDPOINTS} endpoints; delete one first.")
    problems.raise_if_any()
    endpoint = Endpoint.objects.create(owner=user, url=payload.url, description=payload.description,
                                       event_types=sorted(set(payload.event_types)), enabled=payload.enabled)
    return HttpStatus(201, endpoint)


@router.get("/webhooks/endpoints/{endpoint_id}", response={200: EndpointOut, **error_responses(401, 403, 404)},
            **READ)
def get_endpoint(request: HttpRequest, endpoint_id: EndpointId):
    return own_endpoint(request, endpoint_id)


@router.patch("/webhooks/endpoints/{endpoint_id}", response={200: EndpointOut, **error_responses(401, 403, 404)},
              **WRITE)
def update_endpoint(request: HttpRequest, endpoint_id: EndpointId, payload: EndpointPatch):
    """Change the fields you send; ``"enabled": true`` also clears why delivery disabled it."""
    problems = FieldProblems()
    if payload.url is not None:
        check_url(payload.url, problems)
    problems.raise_if_any()
    with transaction.atomic():
        endpoint = own_endpoint(request, endpoint_id, lock=True)
        changes = payload.dict(exclude_none=True)
        if "event_types" in changes:
            changes["event_types"] = sorted(set(changes["event_types"]))
        if changes.get("enabled") and not endpoint.enabled:
            endpoint.disabled_reason, endpoint.failing_since = "", None
        for name, value in changes.items():
            setattr(endpoint, name, value)
        endpoint.save()
    return endpoint


@router.delete("/webhooks/endpoints/{endpoint_id}", response={204: None, **error_responses(401, 403, 404)}, **WRITE)
def delete_endpoint(request: HttpRequest, endpoint_id: EndpointId):
    """Unsubscribe: the endpoint, its pending deliveries and its log are deleted."""
    own_endpoint(request, endpoint_id).delete()
    return HttpResponse(status=204)


@router.post("/webhooks/endpoints/{endpoint_id}/rotate-secret",
             response={200: EndpointWithSecretOut, **error_responses(401, 403, 404)}, **WRITE)
def rotate_secret(request: HttpRequest, endpoint_id: EndpointId):
    """A new secret, shown only in this answer; the previous one keeps signing for 24 hours."""
    with transaction.atomic():
        endpoint = own_endpoint(request, endpoint_id, lock=True)
        endpoint.rotate_secret()
    return endpoint


@router.get("/webhooks/endpoints/{endpoint_id}/attempts",
            response={200: list[AttemptOut], **error_responses(401, 403, 404)}, **READ)
def list_attempts(request: HttpRequest, endpoint_id: EndpointId):
    """The endpoint's last 50 attempts, newest first: what it answered, or the network error."""
    endpoint = own_endpoint(request, endpoint_id)
    return endpoint.attempts.select_related("message").order_by("-pk")[:50]
