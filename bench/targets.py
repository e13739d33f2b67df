"""What is measured: the issue's list of targets, with concrete URLs picked from the generated archive.

Queries per request are counted in-process with Django's test client (the same
settings and database as the server), so wrk's numbers are not perturbed by
counting; a page is counted cold (cache off) and warm (after one request).
"""
import hashlib
import html
import hmac
import json
import re
import uuid
from dataclasses import dataclass, field

from django.conf import settings
from django.core.cache import cache
from django.db import connection
from django.db.models import Count
from django.db.models.functions import Length
from django.test import Client, override_settings
from django.test.utils import CaptureQueriesContext
from taggit.models import Tag

from blog.models import Author, Post
from digests.models import Digest, Repository
from reader.caching import LOCAL
from publishing.pagination import PER_PAGE

from tests.fixtures import WEBHOOK_PAYLOADS

from . import newsroom
from .text import ADMIN_SEARCH_WORD, SEARCH_QUERY

API_LIMIT = 20
DEEP_PAGE = 100
NEXT_LINK = re.compile(r'<a rel="next" href="([^"]+)"')
WEBHOOK_PAYLOAD = WEBHOOK_PAYLOADS / "pull_request.opened.payload.json"


@dataclass
class Target:
    name: str
    path: str
    kind: str  # "baseline", "page", "feed", "api", "webhook", "admin" (signed in: never cached)
    note: str = ""
    method: str = "GET"
    body: bytes = b""
    headers: dict = field(default_factory=dict)
    unique_header: str = ""
    crawled_from: str = ""  # a deep page: the listing it was reached from, by following next links
    crawl: str = ""  # how: "page" (the reader's "Older" links) or "api" (next_cursor)


def _popular_tag() -> Tag:
    return Tag.objects.annotate(post_count=Count("blog_taggedpost_items")).order_by("-post_count").first()


def _prolific_author() -> Author:
    return Author.objects.published().annotate(post_count=Count("post_links")).order_by("-post_count").first()


def _busiest_repository() -> Repository:
    """The repository with the most references: its page charts the most weeks of merges."""
    return Repository.objects.published().annotate(reference_count=Count("references")).order_by("-reference_count").first()


def _middle(queryset):
    """A typical item: the one in the middle of the archive, not the newest (the newest is the cheapest)."""
    return queryset[queryset.count() // 2]


def _deep_cursor(fetch, path: str) -> tuple[str, int]:
    """The API cursor DEEP_PAGE pages in (or of the last page, in a smaller archive) and its page number.

    ``fetch(url)`` returns a response body: the test client's here, a live server's in ``bench.compare``.
    """
    url, page = path, 1
    while page < DEEP_PAGE:
        next_cursor = json.loads(fetch(url))["next_cursor"]
        if next_cursor is None:
            break
        url, page = f"{path}&cursor={next_cursor}", page + 1
    return url, page


def _deep_page(fetch, path: str) -> tuple[str, int]:
    """The listing page DEEP_PAGE pages in, reached as a reader does: following "Older" links (keyset cursors)."""
    url, page = path, 1
    while page < DEEP_PAGE:
        found = NEXT_LINK.search(fetch(url))
        if found is None:
            break
        url, page = path + html.unescape(found.group(1)), page + 1
    return url, page


def webhook_target() -> Target:
    body = WEBHOOK_PAYLOAD.read_bytes()
    signature = "sha256=" + hmac.new(settings.GITHUB_WEBHOOK_SECRET.encode(), body, hashlib.sha256).hexdigest()
    headers = {"Content-Type": "application/json", "X-GitHub-Event": "pull_request", "X-Hub-Signature-256": signature}
    return Target("webhook (verify + store + enqueue)", "/webhooks/github", "webhook", method="POST", body=body,
                  headers=headers, unique_header="X-GitHub-Delivery")


def build_targets() -> list[Target]:
    """Every target of the issue, in the order they alternate."""
    client = Client()

    def fetch(url: str) -> str:
        return client.get(url).content.decode()

    tag = _popular_tag()
    tag_pages = max(1, -(-Post.objects.published().tagged(tag.slug).count() // PER_PAGE))
    tag_first, digests_first = f"/tags/{tag.slug}/", f"/api/v1/digests/?limit={API_LIMIT}"
    posts_first = f"/api/v1/posts/?limit={API_LIMIT}"
    tag_deep, tag_page = _deep_page(fetch, tag_first)
    digests_deep, digests_page = _deep_cursor(fetch, digests_first)
    posts_deep, posts_page = _deep_cursor(fetch, posts_first)
    return [
        Target("baseline", "/bench/baseline/", "baseline"),
        Target("home", "/", "page"),
        Target("wire", "/wire/", "page"),
        Target("digest page", _middle(Digest.objects.published()).get_absolute_url(), "page"),
        Target("posts", "/posts/", "page"),
        Target("post page", _middle(Post.objects.published()).get_absolute_url(), "page"),
        Target("tag page 1", f"/tags/{tag.slug}/", "page", note=f"{tag_pages} pages"),
        Target("tag page 100", tag_deep, "page", note=f"page {tag_page}", crawled_from=tag_first, crawl="page"),
        Target("author page", _prolific_author().get_absolute_url(), "page"),
        Target("repository page", _busiest_repository().get_absolute_url(), "page", note="activity chart"),
        Target("search", f"/search/?q={SEARCH_QUERY.replace(' ', '+')}", "page"),
        Target("posts atom feed", "/posts/feed.atom", "feed"),
        Target("api digests page 1", f"/api/v1/digests/?limit={API_LIMIT}", "api"),
        Target("api digests cursor 100", digests_deep, "api", note=f"page {digests_page}",
               crawled_from=digests_first, crawl="api"),
        Target("api posts page 1", f"/api/v1/posts/?limit={API_LIMIT}", "api"),
        Target("api posts cursor 100", posts_deep, "api", note=f"page {posts_page}",
               crawled_from=posts_first, crawl="api"),
        webhook_target(),
        *admin_targets(),
    ]


#: The admin's large lists, a search in each, a filtered list and the heaviest change form (issue 26).
ADMIN_PAGES = [
    ("admin posts", "/admin/blog/post/"),
    ("admin posts search", f"/admin/blog/post/?q={ADMIN_SEARCH_WORD}"),
    ("admin digests", "/admin/digests/digest/"),
    ("admin digests search", f"/admin/digests/digest/?q={ADMIN_SEARCH_WORD}"),
    ("admin references", "/admin/digests/reference/"),
    # The issue timed ?q=fix; generated titles never say "fix", so the references are searched for the same word.
    ("admin references search", f"/admin/digests/reference/?q={ADMIN_SEARCH_WORD}"),
    ("admin references merged", "/admin/digests/reference/?state__exact=merged"),
    ("admin deliveries", "/admin/ingestion/webhookdelivery/"),
    ("admin deliveries search", "/admin/ingestion/webhookdelivery/?q=pull_request"),
]


def _most_cited_digest() -> Digest:
    return Digest.objects.annotate(citations=Count("digest_references")).order_by("-citations", "pk").first()


def _heaviest_post() -> Post:
    """The post whose change form has the most to show: bylines, then tag rows, then the longest body."""
    return Post.objects.annotate(bylines=Count("post_authors", distinct=True),
                                 tag_rows=Count("tagged_items", distinct=True),
                                 body_length=Length("body")).order_by("-bylines", "-tag_rows", "-body_length",
                                                                      "pk").first()


def admin_targets() -> list[Target]:
    """The newsroom signed in as the Publisher; the admin pages above and the change forms of the digest with the
    most citations and of the heaviest post (the forms edit conflicts check, issue 37), signed in as a superuser."""
    headers = {"Cookie": newsroom.session_cookie(newsroom.SUPERUSER)}
    digest, post = _most_cited_digest(), _heaviest_post()
    pages = [*ADMIN_PAGES, ("admin digest change form", f"/admin/digests/digest/{digest.pk}/change/"),
             ("admin post change form", f"/admin/blog/post/{post.pk}/change/")]
    return [Target("newsroom (Publisher)", "/admin/", "admin", note="signed in",
                   headers={"Cookie": newsroom.session_cookie()}),
            *(Target(name, path, "admin", note="superuser", headers=headers) for name, path in pages)]


def path_on(target: Target, fetch) -> str:
    """The target's path on a server whose cursors may differ (another checkout's, in ``bench.compare``)."""
    if target.crawl == "page":
        return _deep_page(fetch, target.crawled_from)[0]
    if target.crawl == "api":
        return _deep_cursor(fetch, target.crawled_from)[0]
    return target.path


def _request(client: Client, target: Target):
    if target.method == "POST":
        headers = {**target.headers, target.unique_header: f"bench-count-{uuid.uuid4()}"}
        content_type = headers.pop("Content-Type")
        return client.post(target.path, data=target.body, content_type=content_type, headers=headers)
    return client.get(target.path, headers=target.headers)


def phase_settings(cache_state: str) -> dict:
    """Settings of each phase: page cache off (cold), on (warm), on but asking Redis every time (warm-redis)."""
    return {"PAGE_CACHE_ENABLED": cache_state.startswith("warm"),
            "PAGE_CACHE_LOCAL_SECONDS": 0 if cache_state == "warm-redis" else settings.PAGE_CACHE_LOCAL_SECONDS}


def phase_env(cache_state: str) -> dict[str, str]:
    """``phase_settings`` as environment variables for a gunicorn serving that phase."""
    return {name: str(int(value) if isinstance(value, bool) else value)
            for name, value in phase_settings(cache_state).items()}


def count_queries(target: Target, cache_state: str) -> tuple[int, int]:
    """(SQL queries, status) of one request in the given cache state."""
    client = Client()
    with override_settings(**phase_settings(cache_state)):
        cache.clear()
        LOCAL.reset()
        if cache_state.startswith("warm"):
            _request(client, target)
        with CaptureQueriesContext(connection) as queries:
            response = _request(client, target)
    return len(queries), response.status_code


def check(target: Target) -> None:
    """Refuse to benchmark a target that does not answer 2xx (a fast 404 would flatter the numbers)."""
    _, status = count_queries(target, "cold")
    if not 200 <= status < 300:
        raise RuntimeError(f"{target.name} ({target.path}) answered {status}")


def summary(targets: list[Target]) -> str:
    return json.dumps({target.name: target.path for target in targets if target.kind != "webhook"}, indent=1)
