"""The project API, mounted at /api/v1/: one NinjaAPI, one router per app, one error shape.

Every 4xx answers ``{"detail": "...", "errors": [{"field": "...", "message": "..."}]}``
(``errors`` lists field paths for validation problems, and is empty otherwise),
so clients handle failures in one place.
"""
from functools import wraps

from django.core.exceptions import PermissionDenied, SuspiciousOperation
from django.http import Http404, HttpRequest, HttpResponse
from django.views.decorators.http import conditional_page
from ninja import NinjaAPI
from ninja.errors import AuthenticationError, HttpError, Throttled, ValidationError

from blog.api import router as blog_router
from digests.api import router as digests_router
from outbound.api import router as outbound_router

from api.errors import ErrorOut
from api.responses import RENDERER
from api.writing import ApiValidationError

api = NinjaAPI(
    title="RepoJournal API",
    version="1.0.0",
    description=(
        "Published digests, references and posts for anyone; drafts and writes with a Bearer token. "
        "See docs/api.md for authentication, pagination and sync, filtering and errors."
    ),
    urls_namespace="api-v1",
    renderer=RENDERER,
)


def error(request: HttpRequest, status: int, detail: str, errors=()) -> HttpResponse:
    payload = ErrorOut(detail=detail, errors=list(errors)).model_dump()
    return api.create_response(request, payload, status=status)


def field_path(loc) -> str:
    """("body", "payload", "references", 0, "number") -> "body.references.0.number"."""
    parts = [str(part) for part in loc]
    if len(parts) > 2 and parts[0] in {"body", "query"}:
        del parts[1]  # the view's parameter name is not part of the request
    return ".".join(parts)


@api.exception_handler(ValidationError)
def on_validation_error(request, exc):
    errors = [{"field": field_path(item.get("loc", ())), "message": item.get("msg", "")} for item in exc.errors]
    return error(request, 422, "The request did not validate; see errors.", errors)


@api.exception_handler(ApiValidationError)
def on_api_validation_error(request, exc):
    return error(request, 422, exc.message, exc.errors)


@api.exception_handler(AuthenticationError)
def on_authentication_error(request, exc):
    detail = exc.message if exc.message != "Unauthorized" else "Authentication required: send a Bearer token."
    response = error(request, 401, detail)
    response["WWW-Authenticate"] = 'Bearer realm="api"'
    return response


@api.exception_handler(HttpError)
def on_http_error(request, exc):
    response = error(request, exc.status_code, exc.message)
    if isinstance(exc, Throttled) and exc.wait:  # raised by TokenAuth after too many unknown tokens
        response["Retry-After"] = str(int(exc.wait))
    return response


@api.exception_handler(Http404)
def on_not_found(request, exc):
    return error(request, 404, "Not found.")


@api.exception_handler(SuspiciousOperation)
def on_suspicious_request(request, exc):
    """E.g. a body over DATA_UPLOAD_MAX_MEMORY_SIZE: Django would answer with an HTML 400."""
    return error(request, 400, f"Bad request: {exc}")


@api.exception_handler(PermissionDenied)
def on_permission_denied(request, exc):
    return error(request, 403, str(exc) or "You may not do this.")


api.add_router("/", digests_router)
api.add_router("/", blog_router)
api.add_router("/", outbound_router)


def _json_405(view):
    """Ninja answers a wrong method with a plain-text 405; give it the API's error shape."""

    @wraps(view)
    def wrapped(request, *args, **kwargs):
        response = view(request, *args, **kwargs)
        if response.status_code == 405:
            allowed = response["Allow"]
            response = error(request, 405, f"Method {request.method} not allowed here; use {allowed}.")
            response["Allow"] = allowed
        return response

    return wrapped


def urls():
    """api.urls with JSON 405s, for repojournal/urls.py.

    Every GET answer without an ETag of its own (the lists) gets one from its body, and a client
    sending it back as If-None-Match gets a bodiless 304 (Django's ConditionalGetMiddleware, as a
    decorator): cheap polling of a list.
    """
    patterns, app_name, namespace = api.urls
    for pattern in patterns:
        pattern.callback = conditional_page(_json_405(pattern.callback))
    return patterns, app_name, namespace


def not_found(request: HttpRequest, *args, **kwargs) -> HttpResponse:
    """Unknown paths under /api/v1/ answer in the API's error shape, not the site's 404 page."""
    return error(request, 404, "No such API endpoint; see /api/v1/docs.")
