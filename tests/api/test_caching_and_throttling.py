"""Conditional GET on published objects, Cache-Control, and 429 with Retry-After."""
import pytest
from django.test import override_settings

from blog.factories import PostFactory
from digests.factories import DigestFactory, DigestReferenceFactory
from repojournal.workflow import Status

from .conftest import bearer

pytestmark = pytest.mark.django_db


@pytest.fixture
def published_urls():
    digest = DigestFactory()
    citation = DigestReferenceFactory(digest=digest)
    post = PostFactory()
    return {
        "digest": f"/api/v1/digests/{digest.slug}",
        "post": f"/api/v1/posts/{post.slug}",
        "reference": f"/api/v1/references/{citation.reference_id}",
    }


@pytest.mark.parametrize("kind", ["digest", "post", "reference"])
def test_published_objects_carry_validators_and_answer_304(client, published_urls, kind):
    url = published_urls[kind]
    first = client.get(url)
    assert first.status_code == 200
    assert first["ETag"].startswith('"') and first["Last-Modified"].endswith("GMT")
    assert first["Cache-Control"] == "public, max-age=60" and "Authorization" in first["Vary"]

    by_etag = client.get(url, HTTP_IF_NONE_MATCH=first["ETag"])
    assert by_etag.status_code == 304 and by_etag.content == b"" and by_etag["ETag"] == first["ETag"]
    by_date = client.get(url, HTTP_IF_MODIFIED_SINCE=first["Last-Modified"])
    assert by_date.status_code == 304
    assert client.get(url, HTTP_IF_NONE_MATCH='"something-else"').status_code == 200


def test_a_change_changes_the_etag(client):
    digest = DigestFactory()
    url = f"/api/v1/digests/{digest.slug}"
    etag = client.get(url)["ETag"]
    citation = DigestReferenceFactory(digest=digest)
    citation.reference.title = "Retitled"
    citation.reference.save()
    after = client.get(url, HTTP_IF_NONE_MATCH=etag)
    assert after.status_code == 200 and after["ETag"] != etag


def test_drafts_seen_with_a_token_are_private(client, editor, make_token):
    draft = DigestFactory(status=Status.DRAFT)
    response = client.get(f"/api/v1/digests/{draft.slug}", **bearer(make_token(editor, "read:drafts")))
    assert response.status_code == 200 and response["Cache-Control"] == "private, no-cache"
    listing = client.get("/api/v1/digests/", **bearer(make_token(editor, "read:drafts")))
    assert listing["Cache-Control"] == "private, no-cache"
    assert client.get("/api/v1/digests/")["Cache-Control"] == "public, max-age=60"


def test_if_match_mismatch_is_412_in_the_error_shape(client, published_urls):
    response = client.get(published_urls["digest"], HTTP_IF_MATCH='"stale"')
    assert response.status_code == 412 and "changed" in response.json()["detail"]


RATES = {"list_ip": "3/m", "list_token": "2/m", "write_ip": "100/m", "write_token": "1/m"}


@override_settings(API_THROTTLE_RATES=RATES)
def test_lists_are_throttled_per_ip(client):
    codes = [client.get("/api/v1/digests/").status_code for _ in range(4)]
    assert codes == [200, 200, 200, 429]
    assert client.get("/api/v1/posts/").status_code == 429  # one budget for all lists per IP


@override_settings(API_THROTTLE_RATES=RATES)
def test_throttled_answer_has_retry_after_and_the_error_shape(client):
    for _ in range(3):
        client.get("/api/v1/digests/")
    response = client.get("/api/v1/digests/")
    assert response.status_code == 429
    assert int(response["Retry-After"]) >= 1
    assert response.json()["detail"]


@override_settings(API_THROTTLE_RATES=RATES)
def test_writes_are_throttled_per_token(client, editor, make_token):
    first, second = make_token(editor, "write:content"), make_token(editor, "write:content")

    def write(raw):
        return client.post("/api/v1/authors/", {"slug": "x", "name": "X"}, content_type="application/json", **bearer(raw))

    assert write(first).status_code in (201, 422)
    assert write(first).status_code == 429
    assert write(second).status_code != 429  # another token has its own budget


@override_settings(API_THROTTLE_RATES={**RATES, "list_ip": "100/m"})
def test_lists_are_throttled_per_token(client, editor, make_token):
    raw = make_token(editor)
    codes = [client.get("/api/v1/topics/", **bearer(raw)).status_code for _ in range(3)]
    assert codes == [200, 200, 429]
    assert client.get("/api/v1/topics/").status_code == 200  # anonymous from the same IP still has budget


def test_details_are_not_throttled(client, published_urls):
    with override_settings(API_THROTTLE_RATES={**RATES, "list_ip": "1/m"}):
        assert all(client.get(published_urls["digest"]).status_code == 200 for _ in range(5))
