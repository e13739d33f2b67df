"""Unfiltered digest and post lists run a statement compiled once per shape (api/compiled.py):
they must answer exactly what the ORM path answers, with each request's own "now", cursor and
updated_since."""
import datetime

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

import blog.api
import digests.api
from blog.factories import PostFactory
from blog.models import Post
from digests.factories import DigestFactory
from digests.models import Digest
from api import compiled as api_compiled
from publishing.workflow import Status

from .conftest import bearer

pytestmark = pytest.mark.django_db

LISTS = [("/api/v1/digests/", DigestFactory, digests.api), ("/api/v1/posts/", PostFactory, blog.api)]


def walk(client, url, headers, **query) -> list[dict]:
    """Every page of a list, following next_cursor, with the cursors' signatures (which carry the time) cut off."""
    pages, cursor = [], None
    while True:
        page = client.get(url, {**query, **({"cursor": cursor} if cursor else {})}, **headers).json()
        cursor = page["next_cursor"]
        pages.append({**page, "next_cursor": cursor and cursor.split(":")[0]})
        if cursor is None:
            return pages


@pytest.fixture
def archive():
    """Published, scheduled and draft digests and posts, several sharing one updated_at (the cursor's tie-break)."""
    later = timezone.now() + datetime.timedelta(days=1)
    for factory in (DigestFactory, PostFactory):
        factory.create_batch(5)
        factory(status=Status.PUBLISHED, published_at=later)
        factory(status=Status.DRAFT, published_at=None)
    same = timezone.now() - datetime.timedelta(hours=1)
    Digest.objects.filter(pk__in=Digest.objects.order_by("id").values("pk")[:3]).update(updated_at=same)
    Post.objects.filter(pk__in=Post.objects.order_by("id").values("pk")[:3]).update(updated_at=same)


@pytest.mark.parametrize("url, factory, module", LISTS)
@pytest.mark.parametrize("drafts", [False, True])
@pytest.mark.parametrize("query", [
    {}, {"limit": 2}, {"limit": 1}, {"limit": 3, "updated_since": "2000-01-01T00:00:00Z"},
])
def test_compiled_pages_are_the_orm_pages(client, publisher, make_token, monkeypatch, archive, url, factory, module,
                                          drafts, query):
    headers = bearer(make_token(publisher, "read:drafts")) if drafts else {}
    compiled = walk(client, url, headers, **query)
    monkeypatch.setattr(module, "is_unfiltered", lambda request: False)
    assert compiled == walk(client, url, headers, **query)
    assert sum(len(page["items"]) for page in compiled) == (7 if drafts else 5)


@pytest.mark.parametrize("url, factory, module", LISTS)
def test_the_statement_is_compiled_once_per_shape(client, monkeypatch, url, factory, module):
    factory.create_batch(4)
    monkeypatch.setattr(api_compiled, "_statements", {})
    compiled = []
    original = api_compiled._compile
    monkeypatch.setattr(api_compiled, "_compile", lambda *args: compiled.append(args) or original(*args))
    pages = walk(client, url, {}, limit=1)
    assert len(pages) == 4 and len(compiled) == 2  # page 1, then every cursor page from one statement
    with CaptureQueriesContext(connection) as captured:
        client.get(url, {"limit": 1})
    assert len(captured) == 1


@pytest.mark.parametrize("url, factory, module", LISTS)
def test_now_is_each_requests_own(client, monkeypatch, url, factory, module):
    """A scheduled item appears when its time comes, though the statement was compiled before."""
    real_now = timezone.now
    soon = real_now() + datetime.timedelta(minutes=5)
    factory(status=Status.PUBLISHED, published_at=soon)
    assert client.get(url).json()["items"] == []
    monkeypatch.setattr(timezone, "now", lambda: soon + datetime.timedelta(seconds=1))
    assert len(client.get(url).json()["items"]) == 1


@pytest.mark.parametrize("url, factory, module", LISTS)
def test_updated_since_and_cursor_values_are_each_requests_own(client, url, factory, module):
    old, new = factory(), factory()
    type(old).objects.filter(pk=old.pk).update(updated_at=timezone.now() - datetime.timedelta(days=3))
    since = (timezone.now() - datetime.timedelta(days=1)).isoformat()
    assert [item["id"] for item in client.get(url, {"updated_since": since}).json()["items"]] == [new.pk]
    assert [item["id"] for item in client.get(url, {"updated_since": "2000-01-01"}).json()["items"]] == [old.pk, new.pk]
    first = client.get(url, {"limit": 1}).json()
    second = client.get(url, {"limit": 1, "cursor": first["next_cursor"]}).json()
    assert [item["id"] for item in second["items"]] == [new.pk]


@pytest.mark.parametrize("query", ["limit=1&limit=2", "limit=0", "cursor=forged", "updated_since=yesterday"])
def test_bad_paging_parameters_are_still_refused(client, query):
    DigestFactory()
    assert client.get(f"/api/v1/digests/?{query}").status_code in (400, 422)


def test_filters_take_the_orm_path(rf):
    assert api_compiled.is_unfiltered(rf.get("/", {"cursor": "x", "limit": 2, "updated_since": "2026-01-01"}))
    assert not api_compiled.is_unfiltered(rf.get("/", {"limit": 2, "topic": "pytorch"}))
