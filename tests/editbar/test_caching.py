"""The bar never reaches a cache: readers' answers are the same bytes whether or not staff opened the page,
staff answers are private and carry no keys, and the bar costs staff a fixed few queries."""
import os

import pytest
from django.core.cache import cache
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from reader.caching import LOCAL

from .test_bar import bar_of, page_of

pytestmark = pytest.mark.django_db

OBJECT_PAGES = ["post", "digest", "author", "tag", "topic", "repository"]
LISTINGS = ["/", "/posts/", "/wire/"]


@pytest.fixture(params=["locmem", "redis"])
def page_cache(request, settings):
    """The page cache on, over the test settings' local memory and over a real Redis (REDIS_URL's database)."""
    if request.param == "redis":
        if not os.environ.get("REDIS_URL"):
            pytest.skip("REDIS_URL is not set: the Redis variant runs in CI's PostgreSQL + Redis pass")
        redis = {"BACKEND": "reader.cache_backend.RedisCache", "LOCATION": os.environ["REDIS_URL"]}
        settings.CACHES = {"default": redis}
    settings.PAGE_CACHE_ENABLED = True
    forget()
    yield
    forget()


def forget() -> None:
    cache.clear()
    LOCAL.reset()


def url_of(content, page: str) -> str:
    return page if page.startswith("/") else page_of(content, page)


def answer(response) -> tuple[int, bytes, dict]:
    """All a reader receives, but Last-Modified (the second the page cache's version was minted) and
    X-Page-Cache (whether this copy was a hit)."""
    headers = {name: value for name, value in response.headers.items() if name not in ("Last-Modified", "X-Page-Cache")}
    return response.status_code, response.content, headers


@pytest.mark.parametrize("page", OBJECT_PAGES + LISTINGS)
def test_a_staff_visit_leaves_the_readers_answer_byte_identical(page_cache, client, publishing, content, page):
    url = url_of(content, page)
    first = client.get(url)
    assert first["X-Page-Cache"] == "miss"
    never_seen_by_staff = answer(first)
    forget()
    staff = publishing.get(url)
    assert bar_of(staff) and "X-Page-Cache" not in staff  # the page cache neither served nor stored it
    after_staff = client.get(url)
    assert after_staff["X-Page-Cache"] == "miss"  # nothing was stored by the staff visit...
    assert answer(after_staff) == never_seen_by_staff  # ...and the reader's page is the same bytes
    assert bar_of(publishing.get(url))  # staff still get their own page while the reader's is cached
    cached = client.get(url)
    assert cached["X-Page-Cache"] == "hit" and answer(cached) == never_seen_by_staff
    assert b"editbar" not in cached.content


@pytest.mark.parametrize("page", ["post", "repository", "/"])
def test_staff_answers_are_private_with_no_keys_and_the_same_policy(client, publishing, content, settings, page):
    settings.EDGE_PURGE_BACKEND = "cloudflare"  # Cache-Tag too
    url = url_of(content, page)
    reader, staff = client.get(url), publishing.get(url)
    assert bar_of(staff)
    assert "Surrogate-Key" in reader and "public" in reader["Cache-Control"]
    assert staff["Cache-Control"] == "private, no-store"
    assert "Surrogate-Key" not in staff and "Cache-Tag" not in staff
    assert staff["Content-Security-Policy"] == reader["Content-Security-Policy"]
    assert "'nonce-" not in staff["Content-Security-Policy"]


def count_queries(client, url: str) -> tuple[int, object]:
    with CaptureQueriesContext(connection) as queries:
        response = client.get(url)
    return len(queries), response


def test_the_bar_costs_staff_a_fixed_few_queries(client, publishing, content, settings):
    """The session and the user (2) everywhere; the user's and their groups' permissions (2) where
    the page shows an object; the item itself (1) on the 404 of an unpublished post or digest."""
    settings.PAGE_CACHE_ENABLED = False  # count what the views run
    pages = {**{page: page_of(content, page) for page in OBJECT_PAGES}, **{page: page for page in LISTINGS},
             "unpublished": content.draft.get_absolute_url()}
    extra = {}
    for name, url in pages.items():
        reader, _ = count_queries(client, url)
        staff, response = count_queries(publishing, url)
        assert bar_of(response), name
        extra[name] = staff - reader
    assert extra == {**dict.fromkeys(OBJECT_PAGES, 4), **dict.fromkeys(LISTINGS, 2), "unpublished": 5}
