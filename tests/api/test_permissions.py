"""The permission matrix: anonymous, a token without scopes, and each scope, on every path
that can reach unpublished content or change anything."""
import pytest

from accounts.models import ApiToken
from blog.factories import AuthorFactory, PostFactory
from digests.factories import ActionItemFactory, DigestFactory, DigestReferenceFactory, ReferenceFactory, TopicFactory
from publishing.workflow import Status

from .conftest import bearer

pytestmark = pytest.mark.django_db

CALLERS = ["anonymous", "no scope", "read:drafts", "write:content", "publish"]


@pytest.fixture
def drafts(db):
    """One unpublished object of every kind, each reachable only through drafts."""
    topic = TopicFactory(slug="secret-topic", name="Secret topic")
    digest = DigestFactory(topic=topic, status=Status.DRAFT, slug="secret-digest", summary="[1]")
    reference = ReferenceFactory(title="Secret reference")
    DigestReferenceFactory(digest=digest, reference=reference, number=1)
    ActionItemFactory(digest=digest, text="Secret action", repository=reference.repository)
    author = AuthorFactory(slug="secret-author")
    PostFactory(slug="secret-post", status=Status.IN_REVIEW, authors=[author], tags=["secret-tag"])
    return {"reference": reference}


@pytest.fixture
def call(client, publisher):
    """Send a request as one of CALLERS (tokens belong to a Publisher, so only the scope differs)."""

    def send(caller: str, method: str, url: str, data=None):
        headers = {}
        if caller != "anonymous":
            scopes = [] if caller == "no scope" else [caller]
            headers = bearer(ApiToken.issue(publisher, caller, scopes)[1])
        if method == "get":
            return client.get(url, **headers)
        return getattr(client, method)(url, data or {}, content_type="application/json", **headers)

    return send


READS = [
    ("/api/v1/digests/secret-digest", None),
    ("/api/v1/posts/secret-post", None),
    ("/api/v1/digests/", "secret-digest"),
    ("/api/v1/posts/", "secret-post"),
    ("/api/v1/action-items/", "Secret action"),
    ("/api/v1/references/", "Secret reference"),
    ("/api/v1/references/{reference}", None),
    ("/api/v1/topics/", "secret-topic"),
    ("/api/v1/repositories/", "{repository}"),
    ("/api/v1/authors/", "secret-author"),
    ("/api/v1/tags/", "secret-tag"),
]


@pytest.mark.parametrize("caller", CALLERS)
@pytest.mark.parametrize("url, marker", READS)
def test_unpublished_content_is_visible_only_with_read_drafts(drafts, call, caller, url, marker):
    reference = drafts["reference"]
    url = url.format(reference=reference.pk)
    response = call(caller, "get", url)
    allowed = caller == "read:drafts"
    if marker is None:  # a detail: hidden means 404, not 403, so existence does not leak
        assert response.status_code == (200 if allowed else 404)
    else:
        assert response.status_code == 200
        shown = marker.format(repository=reference.repository.full_name) in response.content.decode()
        assert shown is allowed


@pytest.mark.parametrize("caller", CALLERS)
@pytest.mark.parametrize("resource", ["digests", "posts"])
def test_status_filter_for_drafts_needs_read_drafts(drafts, call, caller, resource):
    response = call(caller, "get", f"/api/v1/{resource}/?status=draft")
    expected = {"anonymous": 403, "no scope": 403, "read:drafts": 200, "write:content": 403, "publish": 403}
    assert response.status_code == expected[caller]


DIGEST = {"topic": {"slug": "secret-topic"}, "date": "2026-09-09", "headline": "H", "summary": "S"}
POST = {"title": "T", "slug": "new-post", "body": "B"}
WRITES = [
    ("post", "/api/v1/digests/", DIGEST, "write:content", 201),
    ("put", "/api/v1/digests/secret-digest", {**DIGEST, "summary": "[1]", "references": [
        {"number": 1, "reference": {"repository": "{repository}", "kind": "pull_request", "key": "{key}"}}]},
     "write:content", 200),
    ("post", "/api/v1/digests/secret-digest/submit", None, "write:content", 200),
    ("post", "/api/v1/digests/secret-digest/status", {"status": "published"}, "publish", 200),
    ("post", "/api/v1/repositories/", {"full_name": "new/repo"}, "write:content", 201),
    ("post", "/api/v1/posts/", POST, "write:content", 201),
    ("put", "/api/v1/posts/secret-post", {**POST, "slug": "secret-post"}, "write:content", 200),
    ("post", "/api/v1/posts/secret-post/submit", None, "write:content", 200),
    ("post", "/api/v1/posts/secret-post/status", {"status": "published"}, "publish", 200),
    ("post", "/api/v1/authors/", {"slug": "new-author", "name": "New"}, "write:content", 201),
]


def _fill(value, reference):
    if isinstance(value, dict):
        return {k: _fill(v, reference) for k, v in value.items()}
    if isinstance(value, list):
        return [_fill(v, reference) for v in value]
    if isinstance(value, str):
        return value.format(repository=reference.repository.full_name, key=reference.key)
    return value


@pytest.mark.parametrize("caller", CALLERS)
@pytest.mark.parametrize("method, url, data, needed, success", WRITES)
def test_writes_need_their_scope(drafts, call, caller, method, url, data, needed, success):
    response = call(caller, method, url, _fill(data, drafts["reference"]))
    if caller == "anonymous":
        assert response.status_code == 401
    elif caller == needed:
        assert response.status_code == success, response.content
    else:
        assert response.status_code == 403, response.content
        assert needed in response.json()["detail"]
