"""Router-level tests: each app router on its own (ninja's TestClient: no URLconf, no middleware)."""
import pytest
from ninja.testing import TestClient

from accounts.models import ApiToken
from blog.api import router as blog_router
from blog.factories import AuthorFactory, PostFactory
from digests.api import router as digests_router
from digests.factories import ActionItemFactory, DigestFactory, DigestReferenceFactory, TopicFactory
from publishing.workflow import Status

pytestmark = pytest.mark.django_db


@pytest.fixture
def content():
    digest = DigestFactory(topic=TopicFactory(slug="pytorch"), slug="d1", summary="[1]")
    citation = DigestReferenceFactory(digest=digest, number=1)
    ActionItemFactory(digest=digest, priority="immediate")
    PostFactory(slug="p1", tags=["pytorch"], authors=[AuthorFactory(slug="ada")])
    return {"reference": citation.reference_id}


@pytest.mark.parametrize(
    "router, path, expected",
    [
        (digests_router, "/digests/", "d1"),
        (digests_router, "/digests/d1", "d1"),
        (digests_router, "/action-items/?priority=immediate", "d1"),
        (digests_router, "/references/", "{reference}"),
        (digests_router, "/references/{reference}", "d1"),
        (digests_router, "/topics/", "pytorch"),
        (digests_router, "/repositories/", "/"),
        (blog_router, "/posts/?tag=pytorch", "p1"),
        (blog_router, "/posts/p1", "p1"),
        (blog_router, "/authors/", "ada"),
        (blog_router, "/tags/", "pytorch"),
    ],
)
def test_every_read_operation(content, router, path, expected):
    response = TestClient(router).get(path.format(**content))
    assert response.status_code == 200
    assert expected.format(**content) in response.content.decode()


def bearer(user, *scopes) -> dict:
    return {"Authorization": f"Bearer {ApiToken.issue(user, 't', scopes)[1]}"}


DIGEST = {"topic": {"slug": "pytorch"}, "date": "2027-01-01", "headline": "H", "summary": "S"}


@pytest.mark.parametrize(
    "router, method, path, body, scope, expected",
    [
        (digests_router, "post", "/digests/", DIGEST, "write:content", 201),
        (digests_router, "put", "/digests/draft", {**DIGEST, "slug": "draft"}, "write:content", 200),
        (digests_router, "post", "/digests/draft/submit", None, "write:content", 200),
        (digests_router, "post", "/digests/d1/status", {"status": "archived"}, "publish", 200),
        (digests_router, "post", "/repositories/", {"full_name": "a/b"}, "write:content", 201),
        (blog_router, "post", "/posts/", {"title": "T", "slug": "t", "body": "B"}, "write:content", 201),
        (blog_router, "put", "/posts/p-draft", {"title": "T", "slug": "p-draft", "body": "B"}, "write:content", 200),
        (blog_router, "post", "/posts/p-draft/submit", None, "write:content", 200),
        (blog_router, "post", "/posts/p1/status", {"status": "archived"}, "publish", 200),
        (blog_router, "post", "/authors/", {"slug": "bo", "name": "Bo"}, "write:content", 201),
    ],
)
def test_every_write_operation(content, publisher, router, method, path, body, scope, expected):
    DigestFactory(slug="draft", status=Status.DRAFT)
    PostFactory(slug="p-draft", status=Status.DRAFT)
    client = TestClient(router)
    call = getattr(client, method)
    assert call(path, json=body, headers={}).status_code == 401
    response = call(path, json=body, headers=bearer(publisher, scope))
    assert response.status_code == expected, response.content
