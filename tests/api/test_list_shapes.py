"""The fast list path: items built from rows answer exactly what the schemas would, and
`count` is capped, so a list costs the same however large the archive grows."""
import datetime
import json

import pytest
from django.core.serializers.json import DjangoJSONEncoder
from django.db import connection
from django.test.utils import CaptureQueriesContext

from blog.factories import AuthorFactory, PostFactory
from blog.models import Post
from blog.schemas import PostListOut
from digests.factories import DigestFactory
from digests.models import Digest
from digests.schemas import DigestListOut
from api import pagination, responses
from publishing.workflow import Status

from .conftest import bearer

pytestmark = pytest.mark.django_db


def through_schema(schema, obj) -> dict:
    """What ninja's own response path makes of `obj`: the schema, then the API's renderer."""
    return json.loads(responses.RENDERER.render(None, schema.from_orm(obj).model_dump(), response_status=200))


def test_post_items_are_what_the_schema_answers(client, publisher, make_token):
    first, second = AuthorFactory(handle="first"), AuthorFactory()
    PostFactory(authors=[second, first], tags=["zeta", "Alpha", "mid"], disclosure="Drafted with help.")
    PostFactory(authors=[], tags=[], excerpt="An explicit excerpt.", body="<b>x</b> &amp; y " * 80)
    PostFactory(body="A *long* body & more words. " * 40)
    PostFactory(status=Status.DRAFT, published_at=None)
    response = client.get("/api/v1/posts/", **bearer(make_token(publisher, "read:drafts")))
    posts = Post.objects.with_listing_data().order_by("updated_at", "id")
    expected = [through_schema(PostListOut, post) for post in posts]
    assert response.json()["items"] == expected
    assert [a["handle"] for a in expected[0]["authors"]] == [second.handle, "first"]  # byline order
    assert expected[0]["tags"] == ["Alpha", "mid", "zeta"] and expected[2]["display_excerpt"].endswith("…")


def test_digest_items_are_what_the_schema_answers(client, publisher, make_token):
    DigestFactory(label="", byline="Someone")
    DigestFactory(summary="Cites [1].")
    DigestFactory(status=Status.IN_REVIEW, published_at=None)
    response = client.get("/api/v1/digests/", **bearer(make_token(publisher, "read:drafts")))
    expected = [through_schema(DigestListOut, d) for d in Digest.objects.with_listing_data().order_by("updated_at", "id")]
    assert response.json()["items"] == expected
    assert len(expected) == 3


def test_dates_are_written_as_before_the_renderer_change(client):
    """orjson would write microseconds and "+00:00"; the API keeps Django's format."""
    moment = datetime.datetime(2026, 5, 1, 12, 30, 15, 123456, tzinfo=datetime.timezone.utc)
    DigestFactory(published_at=moment)
    item = client.get("/api/v1/digests/").json()["items"][0]
    assert item["published_at"] == DjangoJSONEncoder().default(moment) == "2026-05-01T12:30:15.123Z"


@pytest.mark.parametrize("url, factory", [("/api/v1/digests/", DigestFactory), ("/api/v1/posts/", PostFactory)])
def test_count_is_exact_up_to_the_cap_and_says_so_past_it(client, monkeypatch, url, factory):
    monkeypatch.setattr(pagination, "COUNT_CAP", 4)
    make = factory.create_batch
    assert client.get(url).json()["count_is_exact"] is True  # nothing at all: 0, exactly
    make(4)
    page = client.get(url, {"limit": 1}).json()
    assert (page["count"], page["count_is_exact"]) == (4, True)
    make(3)
    page = client.get(url, {"limit": 1}).json()
    assert (page["count"], page["count_is_exact"]) == (4, False)
    assert len(page["items"]) == 1 and page["next_cursor"]


@pytest.mark.parametrize("url", ["/api/v1/digests/", "/api/v1/posts/"])
def test_the_count_query_stops_at_the_cap(client, url):
    """The count reads at most COUNT_CAP + 1 rows, not the archive."""
    DigestFactory(), PostFactory()
    with CaptureQueriesContext(connection) as captured:
        assert client.get(url).status_code == 200
    counts = [q["sql"] for q in captured if "COUNT(" in q["sql"].upper()]
    assert len(counts) == 1 and f"LIMIT {pagination.COUNT_CAP + 1}" in counts[0]


def test_urls_match_the_models_own(client):
    post, digest = PostFactory(slug="with_underscore-1"), DigestFactory()
    assert client.get("/api/v1/posts/").json()["items"][0]["url"] == post.get_absolute_url()
    assert client.get("/api/v1/digests/").json()["items"][0]["url"] == digest.get_absolute_url()


def test_cursor_condition_starts_the_index_range_at_the_cursor():
    """(a, b) > (x, y) is written with a leading a >= x the database can use as an index bound."""
    condition = pagination._after(("updated_at", "id"), ["2026-01-01T00:00:00+00:00", 7])
    assert condition.children[0] == ("updated_at__gte", "2026-01-01T00:00:00+00:00")


def test_tag_and_author_filters_by_id_keep_their_meaning(client):
    ada = AuthorFactory(slug="ada")
    both = PostFactory(tags=["compilers", "pytorch"], authors=[ada, AuthorFactory()])
    PostFactory(tags=["pytorch"], authors=[AuthorFactory()])

    def slugs(query):
        response = client.get(f"/api/v1/posts/?{query}")
        assert response.status_code == 200, response.content
        return [p["slug"] for p in response.json()["items"]]

    assert slugs("tag=pytorch&tag=compilers") == [both.slug]
    assert slugs("tag=pytorch&tag=pytorch&tag=compilers") == [both.slug]
    assert len(slugs("tag=pytorch")) == 2
    assert slugs("tag=pytorch&tag=no-such-tag") == [] and slugs("tag=no-such-tag") == []
    assert slugs("author=ada") == [both.slug] and slugs("author=nobody") == []
    assert slugs("author=ada&tag=pytorch") == [both.slug]


@pytest.mark.parametrize("query", ["tag=common", "tag=common&tag=other", "author=ada"])
def test_filtered_post_lists_run_a_fixed_number_of_queries(client, query):
    ada = AuthorFactory(slug="ada")

    def make(n):
        for _ in range(n):
            PostFactory(tags=["common", "other"], authors=[ada, AuthorFactory()])

    def count():
        with CaptureQueriesContext(connection) as captured:
            response = client.get(f"/api/v1/posts/?limit=100&{query}")
        return len(captured), len(response.json()["items"])

    make(3)
    few, few_rows = count()
    make(27)
    many, many_rows = count()
    assert (few_rows, many_rows) == (3, 30) and few == many


@pytest.mark.parametrize("value", [
    datetime.datetime(2026, 5, 1, 12, 30, 15, 123456, tzinfo=datetime.timezone.utc),
    datetime.datetime(2026, 5, 1, 12, 30, 15, tzinfo=datetime.timezone.utc),
    datetime.datetime(2026, 5, 1, 12, 30, 15, 5, tzinfo=datetime.timezone(datetime.timedelta(hours=2))),
    datetime.datetime(2026, 5, 1, 12, 30, 15, 999999),
    datetime.date(2026, 5, 1),
    datetime.time(9, 5, 1, 250000),
])
def test_the_renderer_writes_dates_as_djangos_encoder_does(value):
    assert json.loads(responses.RENDERER.render(None, {"v": value}, response_status=200)) == {
        "v": DjangoJSONEncoder().default(value)
    }


@pytest.mark.parametrize("url, factory, queries", [
    ("/api/v1/digests/", DigestFactory, 1),  # page and count in one statement
    ("/api/v1/posts/", PostFactory, 1),  # bylines and tags are stored with the post
])
def test_the_count_rides_in_the_page_query_and_an_empty_page_still_counts(client, url, factory, queries):
    first, second = factory.create_batch(2)
    with CaptureQueriesContext(connection) as captured:
        page = client.get(url, {"limit": 1}).json()
    assert len(captured) == queries and (page["count"], page["count_is_exact"]) == (2, True)
    type(second).objects.filter(pk=second.pk).update(status=Status.DRAFT)  # the rest vanishes mid-sync
    rest = client.get(url, {"limit": 1, "cursor": page["next_cursor"]}).json()
    assert rest["items"] == [] and rest["next_cursor"] is None and rest["count"] == 1
