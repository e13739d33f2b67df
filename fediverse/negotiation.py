"""Content negotiation on reader pages: ActivityStreams JSON for fediverse clients, the same URL's HTML
for everyone else.

A middleware, so the content apps never import this one (import-linter layers). It sits just outside
``reader.caching.PageCacheMiddleware``: an ActivityStreams request is answered in ``process_view``
before the page cache looks anything up, so a cached HTML page is never served to it and its JSON is
never stored as the page. Every answer of those views says ``Vary: Accept`` (cache hits too: this
middleware is outside the page cache), and the JSON notes the objects it shows (``publishing.shown``)
so the edge files it under the HTML page's surrogate keys and an edit purges both.

Behind Cloudflare (``EDGE_PURGE_BACKEND=cloudflare``) pages are not negotiated: Cloudflare keys its
cache by URL alone and ignores ``Vary: Accept``, so whichever answer it fetched first would be served
to everyone (JSON to browsers, or HTML to Mastodon: WordPress's ActivityPub plugin's #305, #580).
Fediverse servers reach the same documents at their ``/ap/`` ids, which WebFinger names.
"""
from django.conf import settings
from django.http import Http404, HttpResponse
from django.utils.cache import patch_vary_headers

from publishing.shown import shows

from . import actors, views

HTML = "text/html"
ACTIVITY_TYPES = [HTML, views.ACTIVITY_JSON, 'application/ld+json; profile="https://www.w3.org/ns/activitystreams"']
NEGOTIATED = {"digests:index", "blog:index", "digests:topic", "blog:author", "blog:post", "digests:detail"}


def negotiates_pages() -> bool:
    """Whether a page's URL answers fediverse clients too: not behind an edge that ignores ``Vary``."""
    return settings.EDGE_PURGE_BACKEND != "cloudflare"


def wants_activity(request) -> bool:
    """The client prefers ActivityStreams to HTML (a browser's ``*/*`` does not count)."""
    return request.get_preferred_type(ACTIVITY_TYPES) not in (None, HTML)


def document(request, view_name: str, kwargs: dict) -> dict:
    """The JSON the page at this URL stands for; raises Http404 as the HTML view would."""
    if view_name == "blog:post":
        post, body = views.post_document(request, kwargs["slug"])
        shows(request, post)
        return body
    if view_name == "digests:detail":
        digest, body = views.digest_document(request, kwargs["slug"])
        shows(request, digest, digest.topic)
        return body
    actor = actors.at_page(request.path)
    if actor is None:
        raise Http404("This page is not a fediverse account.")
    if actor.row is not None:
        shows(request, actor.row)
    return actor.document(request)


class ActivityNegotiationMiddleware:
    """Place it right before ``reader.caching.PageCacheMiddleware``."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        response = self.get_response(request)
        match = request.resolver_match
        if match is not None and match.view_name in NEGOTIATED and negotiates_pages():
            patch_vary_headers(response, ["Accept"])
        return response

    def process_view(self, request, view_func, view_args, view_kwargs):
        match = request.resolver_match
        if (request.method not in ("GET", "HEAD") or match.view_name not in NEGOTIATED or not negotiates_pages()
                or not wants_activity(request)):
            return None
        try:
            return views.activity_response(document(request, match.view_name, view_kwargs))
        except Http404 as error:
            return HttpResponse(str(error) or "Not found.", status=404, content_type="text/plain")
