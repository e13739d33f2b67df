"""Surrogate keys: the names under which an edge cache files each response, so a purge finds it.

A response lists every object it shows (``post-12``, ``digest-7``, ``author-3``,
``topic-2``, ``repo-40``, ``tag-<hash>``) plus the listings it belongs to
(``posts``, ``digests``, ``tags``, ``topics``, ``search``, ``sitemap``, ``api``,
``api-posts``, ``api-digests``), and ``site`` (purge-all). The views note what
they printed with ``publishing.shown.shows``; the listing keys follow from the
view's name (``VIEW_KEYS``) or the API path (``API_KEYS``). No query is made
here: the objects are the ones the view already loaded.

Tags are keyed by a hash of their name, not by id: post pages and feeds know
their tags only by the names stored with the post (``Post.authors_tags``), and
the hash is ASCII whatever the name's script.

A listing of more than ``EDGE_MAX_KEYS_PER_KIND`` objects of one kind lists
``<kind>-any`` instead (``post-any``...), a key every change of that kind purges,
so headers stay small (Varnish's default limit on a header is 8 KB).
docs/deployment.md, "Edge contract", lists the keys of every page.
"""
import hashlib
from collections.abc import Iterable

from django.conf import settings

SITE = "site"
#: Listing keys by view name: what a page lists besides the objects it notes.
VIEW_KEYS = {
    "home": ("posts", "digests"),
    "search": ("search",),
    "sitemap": ("sitemap",),
    "robots": (),
    "blog:index": ("posts",),
    "blog:feed": ("posts",),
    "blog:post": (),
    "blog:card": (),
    "blog:tags": ("tags", "posts"),
    "blog:tag": (),
    "blog:tag_feed": (),
    "blog:author": (),
    "blog:author_feed": (),
    "digests:index": ("digests", "topics"),
    "digests:feed": ("digests",),
    "digests:detail": (),
    "digests:card": (),
    "digests:topics": ("topics", "digests"),
    "digests:topic": (),
    "digests:topic_feed": (),
    "digests:repository": (),
    "digests:repository_feed": (),
    "images:rendition": (),  # immutable (content-hash names): kept a year, never purged but with `site`
}
#: API path prefixes (after /api/v1/) and the family key their answers carry.
API_KEYS = {
    "posts": "api-posts", "authors": "api-posts", "tags": "api-posts",
    "digests": "api-digests", "action-items": "api-digests", "references": "api-digests",
    "topics": "api-digests", "repositories": "api-digests",
}
API_PREFIX = "/api/v1/"
#: Model label -> key prefix.
PREFIXES = {"blog.post": "post", "digests.digest": "digest", "blog.author": "author", "taggit.tag": "tag",
            "digests.topic": "topic", "digests.repository": "repo"}


def tag_key(name: str) -> str:
    """A tag's key from its name (case-insensitive, like the site's tags)."""
    return "tag-" + hashlib.blake2s(name.casefold().encode(), digest_size=5).hexdigest()


def key_of(obj) -> str | None:
    """The key of one model instance, or None for things no purge names."""
    meta = getattr(obj, "_meta", None)
    prefix = PREFIXES.get(meta.label_lower) if meta is not None else None
    if prefix is None:
        return None
    if prefix == "tag":
        return tag_key(obj.name)
    return f"{prefix}-{obj.pk}"


def keys_of(things: Iterable) -> list[str]:
    """Keys of instances, and of the instances inside lists and pages of them (one level down)."""
    keys = []
    for thing in things:
        if hasattr(thing, "_meta"):
            keys.append(key_of(thing))
        elif isinstance(thing, str):
            keys.append(thing)
        elif thing is not None and getattr(thing, "_result_cache", ()) is not None:  # never run a query
            keys.extend(key_of(item) for item in thing)
    return [key for key in keys if key]


def capped(keys: Iterable[str]) -> list[str]:
    """`keys` without repeats, each kind of object listed at most EDGE_MAX_KEYS_PER_KIND times
    (beyond that: ``<kind>-any``)."""
    limit = settings.EDGE_MAX_KEYS_PER_KIND
    unique = list(dict.fromkeys(keys))
    counts: dict[str, int] = {}
    for key in unique:
        kind = key.rsplit("-", 1)[0] if "-" in key else key
        counts[kind] = counts.get(kind, 0) + 1
    crowded = {kind for kind, count in counts.items() if count > limit and kind in PREFIXES.values()}
    if not crowded:
        return unique
    kept = [key for key in unique if key.rsplit("-", 1)[0] not in crowded]
    return kept + [f"{kind}-any" for kind in sorted(crowded)]


def response_keys(request) -> list[str] | None:
    """The keys of the response to `request`, or None if it is no page the edge may keep."""
    if request.path.startswith(API_PREFIX):
        family = API_KEYS.get(request.path[len(API_PREFIX):].split("/", 1)[0])
        return [SITE, "api", family] if family else None
    match = request.resolver_match
    listing = VIEW_KEYS.get(match.view_name) if match is not None else None
    if listing is None:
        return None
    shown = getattr(request, "shown", ())
    extra = related_keys(shown) if match.view_name == "blog:post" else ()
    return capped([SITE, *listing, *keys_of(shown), *extra])


def related_keys(shown) -> list[str]:
    """A post page's related posts are drawn from its tags' posts: a post joining one of those tags
    may join the list, so the page carries its tags' keys (names stored with the post, no query)."""
    post = shown[0] if shown else None
    names = (getattr(post, "authors_tags", None) or {}).get("tags", ())
    return [tag_key(name) for name in names]
