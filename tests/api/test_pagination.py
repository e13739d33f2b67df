"""Cursor pagination, incremental sync with updated_since, and the 4xx for bad list parameters."""
import datetime

import pytest
from django.utils import timezone

from digests.factories import DigestFactory
from digests.models import Digest
from api.pagination import MAX_PAGE_SIZE

pytestmark = pytest.mark.django_db


def walk(client, url: str) -> list[dict]:
    """Follow next_cursor to the end, as a syncing client would."""
    seen, cursor = [], None
    while True:
        response = client.get(url, {"cursor": cursor} if cursor else {})
        assert response.status_code == 200, response.content
        page = response.json()
        seen += page["items"]
        cursor = page["next_cursor"]
        if cursor is None:
            return seen


def test_cursor_pages_through_everything_once_with_totals(client):
    digests = DigestFactory.create_batch(7)
    first = client.get("/api/v1/digests/?limit=3").json()
    assert first["count"] == 7 and len(first["items"]) == 3 and first["next_cursor"]
    slugs = [d["slug"] for d in walk(client, "/api/v1/digests/?limit=3")]
    assert sorted(slugs) == sorted(d.slug for d in digests)
    assert len(slugs) == len(set(slugs))


def test_updated_since_resumes_a_sync(client):
    DigestFactory.create_batch(3)
    checkpoint = timezone.now()
    changed = Digest.objects.order_by("id").first()
    changed.headline = "Changed after the checkpoint"
    changed.save()
    since = checkpoint.isoformat().replace("+", "%2B")
    found = walk(client, f"/api/v1/digests/?updated_since={since}&limit=1")
    assert [d["headline"] for d in found] == ["Changed after the checkpoint"]


def test_an_object_changed_mid_sync_is_seen_again_not_skipped(client):
    DigestFactory.create_batch(4)
    page = client.get("/api/v1/digests/?limit=2").json()
    already_seen = Digest.objects.get(slug=page["items"][0]["slug"])
    already_seen.headline = "Edited mid-sync"
    already_seen.save()
    rest = walk(client, f"/api/v1/digests/?limit=2&cursor={page['next_cursor']}")
    assert "Edited mid-sync" in [d["headline"] for d in rest]
    assert len(rest) == 3


def test_naive_updated_since_is_taken_as_utc(client):
    DigestFactory()
    future = (timezone.now() + datetime.timedelta(hours=1)).replace(tzinfo=None).isoformat()
    assert client.get(f"/api/v1/digests/?updated_since={future}").json()["count"] == 0


@pytest.mark.parametrize(
    "query, status, needle",
    [
        ("colour=blue", 400, "Unknown query parameter(s): colour"),
        ("topic=a&topic=b", 400, "once: topic"),
        ("cursor=not-a-cursor", 400, "Malformed cursor"),
        ("date_from=2026-02-30", 422, "query.date_from"),
        ("updated_since=yesterday", 422, "query.updated_since"),
        ("updated_since=1700000000", 422, "query.updated_since"),
        (f"limit={MAX_PAGE_SIZE + 1}", 422, "query.limit"),
        ("limit=0", 422, "query.limit"),
        ("priority=someday", 422, "query.priority"),
        ("topic=%00", 422, "query.topic"),
    ],
)
def test_bad_list_parameters_get_a_clear_4xx(client, query, status, needle):
    response = client.get(f"/api/v1/digests/?{query}")
    assert response.status_code == status
    body = response.json()
    assert needle in body["detail"] or needle in [e["field"] for e in body["errors"]]


def test_a_cursor_from_another_list_is_refused(client):
    DigestFactory.create_batch(3)
    cursor = client.get("/api/v1/tags/?limit=1").json()["next_cursor"]
    from blog.factories import PostFactory

    PostFactory(tags=["a", "b"])
    cursor = client.get("/api/v1/tags/?limit=1").json()["next_cursor"]
    assert client.get(f"/api/v1/digests/?cursor={cursor}").status_code == 400


def test_unknown_api_path_and_wrong_method_use_the_error_shape(client):
    missing = client.get("/api/v1/no-such-thing/")
    assert missing.status_code == 404 and missing.json()["errors"] == []
    wrong = client.delete("/api/v1/digests/")
    assert wrong.status_code == 405 and "DELETE" in wrong.json()["detail"]
