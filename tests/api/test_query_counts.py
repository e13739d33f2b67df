"""List endpoints run a fixed number of queries, however many rows a page holds."""
import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from blog.factories import AuthorFactory, PostFactory
from digests.factories import ActionItemFactory, DigestFactory, DigestReferenceFactory, FAQEntryFactory

from .conftest import bearer

pytestmark = pytest.mark.django_db


def make_digests(n: int) -> None:
    for _ in range(n):
        digest = DigestFactory()
        DigestReferenceFactory(digest=digest)
        ActionItemFactory(digest=digest)
        FAQEntryFactory(digest=digest)


def make_posts(n: int) -> None:
    for index in range(n):
        PostFactory(authors=[AuthorFactory(), AuthorFactory()], tags=[f"tag{index}", "common"])


ENDPOINTS = [
    ("/api/v1/digests/", make_digests),
    ("/api/v1/action-items/", make_digests),
    ("/api/v1/references/", make_digests),
    ("/api/v1/topics/", make_digests),
    ("/api/v1/repositories/", make_digests),
    ("/api/v1/posts/", make_posts),
    ("/api/v1/authors/", make_posts),
    ("/api/v1/tags/", make_posts),
]


def count_queries(client, url: str, headers: dict) -> tuple[int, int]:
    with CaptureQueriesContext(connection) as captured:
        response = client.get(url, {"limit": 100}, **headers)
    assert response.status_code == 200, response.content
    return len(captured), len(response.json()["items"])


@pytest.mark.parametrize("url, make", ENDPOINTS)
@pytest.mark.parametrize("with_token", [False, True], ids=["anonymous", "read-drafts-token"])
def test_list_query_count_does_not_grow_with_rows(client, url, make, with_token, publisher, make_token):
    headers = bearer(make_token(publisher, "read:drafts")) if with_token else {}
    client.get(url, **headers)  # warm up: the token's last_used_at write happens once a minute
    make(3)
    few, few_rows = count_queries(client, url, headers)
    make(27)
    many, many_rows = count_queries(client, url, headers)
    assert many_rows >= 10 * few_rows / 2 and many_rows > few_rows
    assert many == few, f"{url}: {few} queries for {few_rows} rows but {many} for {many_rows}"


@pytest.mark.parametrize("url", ["/api/v1/digests/{slug}", "/api/v1/posts/{slug}"])
def test_detail_query_count_does_not_grow_with_related_rows(client, url):
    digest, post = DigestFactory(), PostFactory(authors=[AuthorFactory()], tags=["a"])
    target = url.format(slug=digest.slug if "digests" in url else post.slug)
    with CaptureQueriesContext(connection) as few:
        assert client.get(target).status_code == 200
    for number in range(2, 30):
        DigestReferenceFactory(digest=digest, number=number)
        ActionItemFactory(digest=digest)
    post.tags.add(*[f"t{n}" for n in range(30)])
    with CaptureQueriesContext(connection) as many:
        assert client.get(target).status_code == 200
    assert len(many) == len(few)
