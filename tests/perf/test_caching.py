"""The page cache: hits cost no SQL, and publishing, editing or unpublishing anything shown changes the page."""
import datetime
import os
import time

import pytest
from django.conf import settings
from django.core.cache import cache, caches
from django.test import override_settings
from django.test.utils import CaptureQueriesContext
from django.db import connection
from django.utils import timezone

from blog.factories import AuthorFactory, PostFactory
from digests.factories import DigestFactory, DigestReferenceFactory, ReferenceFactory
from reader.caching import LOCAL, VERSION_KEY
from publishing.workflow import Status
from tests.rerenders import run_rerenders

pytestmark = pytest.mark.django_db


REDIS_BACKEND = "reader.cache_backend.RedisCache"


def redis_url() -> str:
    """The Redis database the settings name (REDIS_URL), and no other: these tests clear it."""
    return os.environ["REDIS_URL"]


def page_cache_on(request, settings):
    """The page cache on, on the cache `request.param` names ("locmem" or "redis"), emptied before and after.
    A generator for a fixture to yield from (tests/fediverse uses it too)."""
    if request.param == "redis":
        if not os.environ.get("REDIS_URL"):
            pytest.skip("REDIS_URL is not set: the Redis variant runs in CI's PostgreSQL + Redis pass")
        settings.CACHES = {"default": {"BACKEND": REDIS_BACKEND, "LOCATION": redis_url()}}
    settings.PAGE_CACHE_ENABLED = True
    cache.clear()
    LOCAL.reset()
    yield
    cache.clear()
    LOCAL.reset()


@pytest.fixture(autouse=True, params=["locmem", "redis"])
def page_cache(request, settings):
    """Every test runs on the test settings' local-memory cache and on a real Redis."""
    yield from page_cache_on(request, settings)


def queries_for(client, url: str, **headers) -> tuple[int, object]:
    with CaptureQueriesContext(connection) as queries:
        response = client.get(url, headers=headers)
    return len(queries), response


def test_the_middleware_is_installed_last():
    """Last but the edge's key middleware: the outer middleware adds its security, framing and
    CSP headers to cached pages too, and the surrogate keys inside it are stored with each page."""
    assert settings.MIDDLEWARE[-2:] == ["reader.caching.PageCacheMiddleware", "edge.middleware.SurrogateKeyMiddleware"]


@pytest.mark.parametrize("rows", [3, 30])
def test_a_cached_page_costs_no_queries_whatever_its_size(client, rows):
    PostFactory.create_batch(rows)
    first, response = queries_for(client, "/posts/")
    again, cached = queries_for(client, "/posts/")
    assert first > 0
    assert again == 0
    assert cached.content == response.content
    assert cached["X-Frame-Options"] == response["X-Frame-Options"] == "DENY"


def test_publishing_a_post_changes_every_page_showing_it(client, publisher):
    PostFactory(title="Already out", tags=["cuda"])
    draft = PostFactory(title="Fresh news", status=Status.DRAFT, published_at=None, tags=["cuda"])
    pages = ["/", "/posts/", "/tags/cuda/", "/posts/feed.atom"]
    for url in pages:
        assert "Fresh news" not in client.get(url).content.decode()
    draft.transition(publisher, Status.PUBLISHED)
    for url in pages:
        assert "Fresh news" in client.get(url).content.decode(), url
    assert client.get(draft.get_absolute_url()).status_code == 200


def test_editing_a_post_changes_its_pages(client):
    post = PostFactory(title="Old title")
    assert "Old title" in client.get(post.get_absolute_url()).content.decode()
    post.title = "New title"
    post.save()
    for url in (post.get_absolute_url(), "/posts/", "/"):
        page = client.get(url).content.decode()
        assert "New title" in page and "Old title" not in page, url


def test_unpublishing_a_post_removes_it(client, publisher):
    post = PostFactory(title="Soon archived")
    assert client.get(post.get_absolute_url()).status_code == 200
    assert "Soon archived" in client.get("/posts/").content.decode()
    post.transition(publisher, Status.ARCHIVED)
    assert client.get(post.get_absolute_url()).status_code == 404
    assert "Soon archived" not in client.get("/posts/").content.decode()


def test_renaming_an_author_changes_the_byline(client):
    author = AuthorFactory(name="Ada Before")
    post = PostFactory(authors=[author])
    assert "Ada Before" in client.get(post.get_absolute_url()).content.decode()
    author.name = "Ada After"
    author.save()
    run_rerenders()  # the worker's part of the rename: the cached page follows it
    assert "Ada After" in client.get(post.get_absolute_url()).content.decode()


def test_tagging_a_post_adds_it_to_the_tag_page(client):
    PostFactory(title="Tagged first", tags=["perf"])
    later = PostFactory(title="Tagged later")
    assert "Tagged later" not in client.get("/tags/perf/").content.decode()
    later.tags.add("perf")
    assert "Tagged later" in client.get("/tags/perf/").content.decode()


def digest_with_reference(**kwargs):
    digest = DigestFactory(summary="Shipped [1].", **kwargs)
    reference = ReferenceFactory(title="Original reference title")
    DigestReferenceFactory(digest=digest, reference=reference, number=1)
    return digest, reference


def test_publishing_editing_and_unpublishing_a_digest(client, publisher):
    digest, _ = digest_with_reference(headline="Wire story", status=Status.DRAFT, published_at=None)
    assert "Wire story" not in client.get("/wire/").content.decode()
    digest.transition(publisher, Status.PUBLISHED)
    assert "Wire story" in client.get("/wire/").content.decode()
    digest.headline = "Wire story, corrected"
    digest.save()
    assert "Wire story, corrected" in client.get(digest.get_absolute_url()).content.decode()
    digest.transition(publisher, Status.ARCHIVED)
    assert "Wire story" not in client.get("/wire/").content.decode()
    assert client.get(digest.get_absolute_url()).status_code == 404


def test_editing_a_cited_reference_changes_the_digest_page(client):
    digest, reference = digest_with_reference()
    assert "Original reference title" in client.get(digest.get_absolute_url()).content.decode()
    reference.title = "Corrected reference title"
    reference.save()
    assert "Corrected reference title" in client.get(digest.get_absolute_url()).content.decode()


def test_a_scheduled_post_appears_when_its_time_comes_with_no_save(client):
    PostFactory(title="Visible now")
    PostFactory(title="Scheduled soon", published_at=timezone.now() + datetime.timedelta(seconds=1.5))
    assert "Scheduled soon" not in client.get("/posts/").content.decode()
    time.sleep(1.6)
    assert "Scheduled soon" in client.get("/posts/").content.decode()


# Validators and 304s -------------------------------------------------------------------------

def test_pages_carry_validators_and_revisits_get_304(client):
    post = PostFactory()
    response = client.get(post.get_absolute_url())
    assert response.status_code == 200
    etag, last_modified = response["ETag"], response["Last-Modified"]
    assert etag.startswith('"') and last_modified.endswith("GMT")
    count, not_modified = queries_for(client, post.get_absolute_url(), if_none_match=etag)
    assert not_modified.status_code == 304
    assert not_modified.content == b""
    assert count == 0
    assert client.get(post.get_absolute_url(), headers={"if-modified-since": last_modified}).status_code == 304


def test_an_edit_turns_a_304_back_into_a_200(client):
    post = PostFactory(title="Before the edit")
    etag = client.get(post.get_absolute_url())["ETag"]
    post.title = "After the edit"
    post.save()
    response = client.get(post.get_absolute_url(), headers={"if-none-match": etag})
    assert response.status_code == 200
    assert response["ETag"] != etag
    assert "After the edit" in response.content.decode()


def test_feeds_get_304_too(client):
    PostFactory()
    etag = client.get("/posts/feed.atom")["ETag"]
    assert client.get("/posts/feed.atom", headers={"if-none-match": etag}).status_code == 304


def test_validators_without_the_cache(client, settings):
    """With the cache off (the benchmark's cold phase) pages still get an ETag and 304s."""
    settings.PAGE_CACHE_ENABLED = False
    post = PostFactory()
    first, response = queries_for(client, post.get_absolute_url())
    again, not_modified = queries_for(client, post.get_absolute_url(), if_none_match=response["ETag"])
    assert not_modified.status_code == 304
    assert again == first > 0


# Several workers ---------------------------------------------------------------------------

def another_worker_edits(post, title: str) -> None:
    """What an edit in another process does here: the rows change and the shared version is dropped."""
    type(post).objects.filter(pk=post.pk).update(title=title)  # no signal in this process
    cache.delete(VERSION_KEY)


def test_other_workers_edits_show_within_the_local_window(client, settings):
    settings.PAGE_CACHE_LOCAL_SECONDS = 0.5
    post = PostFactory(title="Title one")
    assert "Title one" in client.get(post.get_absolute_url()).content.decode()
    another_worker_edits(post, "Title two")
    time.sleep(0.6)
    assert "Title two" in client.get(post.get_absolute_url()).content.decode()


def test_with_no_local_window_every_request_asks_the_shared_cache(client, settings):
    settings.PAGE_CACHE_LOCAL_SECONDS = 0
    post = PostFactory(title="Title one")
    client.get(post.get_absolute_url())
    another_worker_edits(post, "Title two")
    assert "Title two" in client.get(post.get_absolute_url()).content.decode()


def test_a_worker_holding_a_page_asks_the_shared_cache_only_for_the_version(client, settings, monkeypatch):
    """With the local window over, a held page is revalidated with the version alone, not re-fetched."""
    settings.PAGE_CACHE_LOCAL_SECONDS = 0
    post = PostFactory(title="Title one")
    first = client.get(post.get_absolute_url())
    backend, asked = caches["default"], []
    real_get, real_get_many = backend.get, backend.get_many
    monkeypatch.setattr(backend, "get", lambda key, *args, **kw: asked.append([key]) or real_get(key, *args, **kw))
    monkeypatch.setattr(backend, "get_many", lambda keys, *args, **kw: asked.append(list(keys))
                        or real_get_many(keys, *args, **kw))
    count, again = queries_for(client, post.get_absolute_url())
    assert (count, again.content) == (0, first.content)
    assert asked == [[VERSION_KEY]]


def test_an_unreachable_cache_serves_from_the_database_and_writes_still_work(client):
    with override_settings(CACHES={"default": {"BACKEND": REDIS_BACKEND, "LOCATION": "redis://127.0.0.1:1/0"}}):
        LOCAL.reset()
        post = PostFactory(title="Written while the cache is down")
        response = client.get(post.get_absolute_url())
    assert response.status_code == 200
    assert "Written while the cache is down" in response.content.decode()


# What is not cached ----------------------------------------------------------------------------

def test_signed_in_staff_bypass_the_cache(client, publisher):
    post = PostFactory(title="Staff see fresh pages")
    client.get("/posts/")
    client.force_login(publisher)
    count, response = queries_for(client, "/posts/")
    assert count > 0
    assert "Staff see fresh pages" in response.content.decode()


def test_not_found_pages_are_not_cached(client):
    PostFactory()
    assert client.get("/posts/not-there/").status_code == 404
    count, response = queries_for(client, "/posts/not-there/")
    assert response.status_code == 404
    assert count > 0


def test_api_lists_are_not_page_cached(client):
    PostFactory()
    client.get("/api/v1/posts/")
    count, response = queries_for(client, "/api/v1/posts/")
    assert response.status_code == 200
    assert count > 0


def test_a_release_that_renames_the_stylesheet_never_serves_pages_linking_the_old_one(client, settings):
    """Issue 25: production names static files by a hash of their content. Pages a previous release
    cached link its stylesheet; a new release (new processes, new names) must render its own."""
    from publishing.context_processors import _navigation
    from reader.caching import static_fingerprint

    PostFactory()
    assert 'href="/static/css/site.css"' in client.get("/posts/").content.decode()
    settings.STATIC_URL = "/static/release-2/"  # what a new release's storage would answer
    for process_cache in (_navigation, static_fingerprint):  # a new release starts new processes
        process_cache.cache_clear()
    try:
        assert 'href="/static/release-2/css/site.css"' in client.get("/posts/").content.decode()
    finally:
        settings.STATIC_URL = "/static/"
        for process_cache in (_navigation, static_fingerprint):
            process_cache.cache_clear()
