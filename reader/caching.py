"""Whole-page caching for readers, invalidated whenever public content changes; ETag/Last-Modified and 304s.

Why a single site-wide version instead of per-page keys: a post's title shows
on the home page, /posts/, its tags' and authors' pages, feeds, search and the
sitemap, so working out exactly which pages an edit touches is where stale
pages come from. Any save or delete of content readers can see (see
``reader.public_changes``: published posts and digests and what they show; not
drafts, not references no published digest cites, so webhooks and polls leave
the cache alone) drops the version key; the next reader mints a new one, and
every page cached under the old one is simply never matched again (it expires
after ``PAGE_CACHE_SECONDS``). Public edits are rare next to reads, so this
costs little. ``X-Page-Cache`` on each reader page says hit, miss or off.

Scheduled publication changes pages with no save at all, so a version also
expires at the next scheduled ``published_at``.

A hit costs one cache round trip (the version and the page are fetched
together) and no SQL -- or none at all: each worker also keeps the pages it
served in memory and trusts its copy of the version for
``PAGE_CACHE_LOCAL_SECONDS`` (default 1 s; 0 asks Redis every time). An edit
made in one worker therefore reaches the others within that second, and the
worker that made it at once. Once that window is over, a worker holding the
page asks only for the version (a few bytes, not the page) and serves its copy
if the version has not moved. Only anonymous GETs of the views named in
``PAGE_CACHE_VIEWS`` are cached: a session cookie (staff) bypasses the cache.
"""
import functools
import hashlib
import logging
import time
import uuid
from dataclasses import dataclass

from django.conf import settings
from django.core.cache import cache
from django.db import transaction
from django.db.models import Min
from django.db.models.signals import m2m_changed, post_delete, post_save, pre_save
from django.http import HttpRequest, HttpResponse
from django.templatetags.static import static
from django.utils import timezone
from django.utils.cache import get_conditional_response
from django.utils.http import http_date

from publishing.context_processors import ASSETS
from publishing.signals import content_changed

from . import public_changes
from publishing.workflow import Status

logger = logging.getLogger(__name__)

VERSION_KEY = "pagecache:version"
PAGE_KEY_PREFIX = "pagecache:page:"
#: Stored with each page. Surrogate-Key: the edge's keys of the page (edge.middleware), so hits carry them.
CACHEABLE_HEADERS = ("Content-Type", "Content-Language", "Content-Disposition", "Surrogate-Key")
#: Says what the page cache did ("hit", "miss", or "off" while disabled), for operators and `make bench`.
STATUS_HEADER = "X-Page-Cache"


@dataclass(frozen=True)
class Version:
    """The state of all public content: pages cached under another token are stale."""

    token: str
    changed_at: int  # epoch seconds: what Last-Modified says
    valid_until: float | None  # the next scheduled publication, when pages change with no save

    def is_current(self, now: float) -> bool:
        return self.valid_until is None or now < self.valid_until


def next_scheduled_publication() -> float | None:
    """When the next scheduled post or digest goes live (epoch seconds), or None."""
    from blog.models import Post
    from digests.models import Digest

    now = timezone.now()
    moments = [
        model.objects.filter(status=Status.PUBLISHED, published_at__gt=now).aggregate(at=Min("published_at"))["at"]
        for model in (Post, Digest)
    ]
    moments = [moment.timestamp() for moment in moments if moment is not None]
    return min(moments) if moments else None


def new_version() -> Version:
    """Mint and store a version; if another process just stored one, use theirs."""
    version = Version(uuid.uuid4().hex, int(time.time()), next_scheduled_publication())
    if not cache.add(VERSION_KEY, version, timeout=None):
        stored = cache.get(VERSION_KEY)
        version = stored if isinstance(stored, Version) else version
    return version


def current(stored) -> Version:
    """The stored version if it is still current, else a new one."""
    if isinstance(stored, Version) and stored.is_current(time.time()):
        return stored
    if stored is not None:
        cache.delete(VERSION_KEY)
    return new_version()


class LocalCopy:
    """This process's copy of the version (trusted briefly) and of the pages it served under it."""

    MAX_PAGES = 500

    def __init__(self):
        self.reset()

    def reset(self) -> None:
        self.version: Version | None = None
        self.checked_at = 0.0
        self.pages: dict[str, tuple] = {}

    def trusted_version(self, now: float) -> Version | None:
        fresh = now - self.checked_at < settings.PAGE_CACHE_LOCAL_SECONDS
        return self.version if fresh and self.version and self.version.is_current(now) else None

    def remember_version(self, version: Version, now: float) -> None:
        if version != self.version:
            self.pages = {}
        self.version, self.checked_at = version, now

    def remember_page(self, key: str, entry: tuple) -> None:
        if len(self.pages) >= self.MAX_PAGES:
            self.pages = {}
        self.pages[key] = entry


LOCAL = LocalCopy()


def invalidate(**_signal_kwargs) -> None:
    """Forget the version now and again once the transaction commits.

    Now: so the writer's own next request sees its change. On commit: a reader
    may have rendered the old rows and minted a version in between.
    """
    forget_version()
    transaction.on_commit(forget_version)


#: While this key lives, readers' reads go to the primary, not a read replica (repojournal/replicas.py):
#: the edge refetches a page right after its purge and keeps it, so it must not be rendered by a
#: replica that has not replayed the change yet. It lives DATABASE_REPLICA_PIN_SECONDS, longer than
#: any replica that serves reads is behind.
CONTENT_CHANGED_KEY = "replica-pin:content-changed"


def forget_version() -> None:
    """Drop the version key; an unreachable cache must not fail the write (its pages expire anyway)."""
    LOCAL.reset()
    try:
        cache.delete(VERSION_KEY)
        if settings.DATABASE_REPLICAS:
            cache.set(CONTENT_CHANGED_KEY, 1, timeout=settings.DATABASE_REPLICA_PIN_SECONDS)
    except Exception:  # redis-py's ConnectionError, TimeoutError: whatever the backend raises
        logger.warning("Could not invalidate the page cache; pages expire in PAGE_CACHE_SECONDS.", exc_info=True)


def invalidate_if_public(sender, instance, raw=False, **kwargs) -> None:
    """A content row was saved or deleted: drop the pages only if readers could see the change."""
    if not raw and public_changes.is_public(sender, instance):
        invalidate()


def invalidate_if_public_m2m(sender, instance, action, **kwargs) -> None:
    """``add()``/``remove()``/``clear()`` on a post's or digest's many-to-many (the reverse side: always)."""
    if action.startswith("post_") and (
        type(instance) not in public_changes.PUBLISHABLE or public_changes.is_public(type(instance), instance)
    ):
        invalidate()


def invalidate_if_bulk_write_public(sender, pks=None, **kwargs) -> None:
    """``publishing.signals.content_changed``: rows written in bulk, without model signals."""
    if public_changes.any_public(sender, pks):
        invalidate()


def connect_signals() -> None:
    """Called from the app config, so workers and management commands invalidate too."""
    from blog.models import Post
    from digests.models import Digest

    for model in public_changes.PUBLISHABLE:
        pre_save.connect(public_changes.remember_public_state, sender=model,
                         dispatch_uid=f"pagecache-before-{model._meta.label}")
    for model in public_changes.CONTENT_MODELS:
        post_save.connect(invalidate_if_public, sender=model, dispatch_uid=f"pagecache-save-{model._meta.label}")
        post_delete.connect(invalidate_if_public, sender=model, dispatch_uid=f"pagecache-delete-{model._meta.label}")
    for through in (Post.tags.through, Post.authors.through, Digest.references.through):
        m2m_changed.connect(invalidate_if_public_m2m, sender=through,
                            dispatch_uid=f"pagecache-m2m-{through._meta.label}")
    content_changed.connect(invalidate_if_bulk_write_public, dispatch_uid="pagecache-bulk-writes")


# Pages ---------------------------------------------------------------------------------------

@functools.cache
def static_fingerprint() -> str:
    """The URLs of the static files every page links to, as this release names them (found once per process).

    Part of every page key. In production those names carry a hash of the files' content, so a
    release that changes the stylesheet renders pages linking a new URL; without this, its processes
    would serve the pages the previous release cached, linking the previous stylesheet, until a
    content change or PAGE_CACHE_SECONDS -- and the edge would then keep them for a day.
    """
    return " ".join(static(path) for path in ASSETS.values())


def page_key(request: HttpRequest) -> str:
    where = f"{static_fingerprint()} {request.get_host()}{request.get_full_path()}"
    digest = hashlib.sha256(where.encode()).hexdigest()
    return PAGE_KEY_PREFIX + digest


def etag_for(content: bytes) -> str:
    return '"%s"' % hashlib.sha256(content).hexdigest()[:32]


def cacheable_request(request: HttpRequest) -> bool:
    match = request.resolver_match
    return (
        request.method == "GET"
        and match is not None
        and match.view_name in settings.PAGE_CACHE_VIEWS
        and settings.SESSION_COOKIE_NAME not in request.COOKIES
        and "HTTP_AUTHORIZATION" not in request.META
    )


def cacheable_response(response: HttpResponse) -> bool:
    cache_control = response.get("Cache-Control", "")
    return (
        response.status_code == 200
        and not response.streaming
        and not response.cookies
        and "private" not in cache_control
        and "no-store" not in cache_control
    )


def answer(request: HttpRequest, response: HttpResponse, etag: str, last_modified: int | None) -> HttpResponse:
    """Add validators to `response`, or answer 304 if the client already has this version."""
    conditional = get_conditional_response(request, etag=etag, last_modified=last_modified)
    if conditional is not None:
        if "Surrogate-Key" in response:  # a shared cache revalidating keeps the page under its keys
            conditional["Surrogate-Key"] = response["Surrogate-Key"]
        response = conditional
    response["ETag"] = etag
    if last_modified is not None:
        response["Last-Modified"] = http_date(last_modified)
    if "Cache-Control" not in response:
        response["Cache-Control"] = "max-age=0, must-revalidate"
    return response


def store(key: str, entry: tuple) -> None:
    if LOCAL.version and LOCAL.version.token == entry[0]:
        LOCAL.remember_page(key, entry)
    try:
        cache.set(key, entry, settings.PAGE_CACHE_SECONDS)
    except Exception:
        logger.warning("Could not store a page in the cache.", exc_info=True)


class PageCacheMiddleware:
    """Serve cached reader pages; cache misses; validators on every reader page.

    Place it last in MIDDLEWARE, so the security and framing headers of the
    outer middleware are added to cached pages too.
    """

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        pending = getattr(request, "_page_cache", None)
        if pending is None or not cacheable_response(response):
            return response
        key, version = pending
        etag = etag_for(response.content)
        if version is not None:
            headers = {name: response[name] for name in CACHEABLE_HEADERS if name in response}
            store(key, (version.token, response.content, headers, etag))
        response = answer(request, response, etag, version.changed_at if version else None)
        response[STATUS_HEADER] = "miss" if version is not None else "off"
        return response

    def process_view(self, request: HttpRequest, view_func, view_args, view_kwargs):
        if not cacheable_request(request):
            return None
        if not settings.PAGE_CACHE_ENABLED:
            request._page_cache = (None, None)
            return None
        key, now = page_key(request), time.time()
        version, entry = LOCAL.trusted_version(now), LOCAL.pages.get(key)
        if version is None or entry is None or entry[0] != version.token:
            try:
                version, entry = self.shared_lookup(key, now, held=entry)
            except Exception:  # the cache is down: serve readers from the database
                logger.warning("Page cache unavailable.", exc_info=True)
                request._page_cache = (None, None)
                return None
        if entry is not None and entry[0] == version.token:
            _token, content, headers, etag = entry
            response = answer(request, HttpResponse(content, headers=headers), etag, version.changed_at)
            response[STATUS_HEADER] = "hit"
            return response
        request._page_cache = (key, version)
        return None

    @staticmethod
    def shared_lookup(key: str, now: float, held: tuple | None = None) -> tuple[Version, tuple | None]:
        """The current version and the page under it, remembered locally.

        A worker already holding the page (`held`, from an earlier version check)
        asks the shared cache for the version alone -- a few bytes instead of the
        page -- and serves its copy if the version has not moved. Otherwise the
        version and the page come in one round trip.
        """
        if held is not None:
            version = current(cache.get(VERSION_KEY))
            LOCAL.remember_version(version, now)
            if held[0] == version.token:
                return version, held
        found = cache.get_many([VERSION_KEY, key])
        version = current(found.get(VERSION_KEY))
        LOCAL.remember_version(version, now)
        entry = found.get(key)
        if entry is not None and entry[0] == version.token:
            LOCAL.remember_page(key, entry)
        return version, entry
