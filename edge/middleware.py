"""Cache-Control and Surrogate-Key for the edge (Varnish, Fastly, Cloudflare) in front of the app.

Two middlewares, because the in-process page cache (``reader.caching``) sits
between them: ``SurrogateKeyMiddleware`` runs inside it and names the view's
response (so a page-cache hit carries the keys it was stored with), and
``EdgeCacheMiddleware`` runs outside the session, CSRF and auth middleware and
decides, seeing their cookies and ``Vary``, whether a shared cache may keep the
answer. What a shared cache may keep: anonymous GET/HEAD answers (200 or 304) of
the views ``edge.keys`` knows, with no cookie set, that no view marked private.
Everything else is ``private, no-store`` (or whatever private policy the view
chose) and carries no keys.
"""
import math
import time

from django.conf import settings
from django.utils.cache import patch_vary_headers

from reader.caching import LOCAL

from . import keys as edge_keys

KEY_HEADER = "Surrogate-Key"
#: Cloudflare's equivalent of Surrogate-Key (comma-separated), sent when Cloudflare is the backend.
TAG_HEADER = "Cache-Tag"
PRIVATE = "private, no-store"


class SurrogateKeyMiddleware:
    """Put the view's keys on its response; place it after ``reader.caching.PageCacheMiddleware``."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        response = self.get_response(request)
        if KEY_HEADER not in response and may_share_request(request):
            found = edge_keys.response_keys(request)
            if found is not None:
                response[KEY_HEADER] = " ".join(found)
        return response


class EdgeCacheMiddleware:
    """Say who may keep each answer; place it right after SecurityMiddleware."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        response = self.get_response(request)
        if may_share_request(request) and may_share_response(response):
            share(response)
        else:
            keep_private(response)
        return response


def may_share_request(request) -> bool:
    """An anonymous read: no session cookie, no Authorization header, no private path."""
    return (
        request.method in ("GET", "HEAD")
        and settings.SESSION_COOKIE_NAME not in request.COOKIES
        and "HTTP_AUTHORIZATION" not in request.META
        and not request.path.startswith(settings.EDGE_PRIVATE_PATHS)
    )


def may_share_response(response) -> bool:
    cache_control = response.get("Cache-Control", "")
    return (
        KEY_HEADER in response
        and response.status_code in (200, 304)
        and not response.cookies
        and "private" not in cache_control
        and "no-store" not in cache_control
    )


def share(response) -> None:
    """Public caching headers; ``Vary: Cookie`` dropped, since no cookie changes an anonymous page."""
    response["Cache-Control"] = public_cache_control()
    if settings.EDGE_PURGE_BACKEND == "cloudflare":
        response[TAG_HEADER] = response[KEY_HEADER].replace(" ", ",")
    if "Vary" in response:
        kept = [v.strip() for v in response["Vary"].split(",") if v.strip() and v.strip().lower() != "cookie"]
        del response["Vary"]
        if kept:
            patch_vary_headers(response, kept)


def keep_private(response) -> None:
    for header in (KEY_HEADER, TAG_HEADER):
        if header in response:
            del response[header]
    if "private" not in response.get("Cache-Control", ""):
        response["Cache-Control"] = PRIVATE


def public_cache_control() -> str:
    """The edge policy, its s-maxage cut short by the next scheduled publication when one is near.

    Purges at each publication's time (``edge.scheduling``) are what make it show
    on time; this cap bounds how long a page outlives it even if no purge arrives.
    The moment comes from the page cache's current version (no query).
    """
    s_maxage = settings.EDGE_S_MAXAGE
    until = next_publication()
    if until is not None:
        s_maxage = max(1, min(s_maxage, math.ceil(until - time.time())))
    return (
        f"public, max-age={min(settings.EDGE_MAX_AGE, s_maxage)}, s-maxage={s_maxage}, "
        f"stale-while-revalidate={settings.EDGE_STALE_WHILE_REVALIDATE}, stale-if-error={settings.EDGE_STALE_IF_ERROR}"
    )


def next_publication() -> float | None:
    version = LOCAL.version
    return version.valid_until if version is not None else None
