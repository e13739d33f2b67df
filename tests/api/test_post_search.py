"""The posts API's `q` is the site's search: the same matching and operators, ranked on PostgreSQL."""
import datetime

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from blog.factories import PostFactory
from reader import search

pytestmark = pytest.mark.django_db

ON_POSTGRES = pytest.mark.skipif(
    connection.vendor != "postgresql", reason="PostgreSQL full-text features (ranking, websearch); CI runs them"
)


def titles(client, query: str, **params) -> list[str]:
    response = client.get("/api/v1/posts/", {"q": query, **params})
    assert response.status_code == 200, response.content
    return [item["title"] for item in response.json()["items"]]


@pytest.fixture
def posts():
    """Posts whose words sit in different fields; the title match is the oldest change."""
    hour = datetime.timedelta(hours=1)
    made = {
        "title": PostFactory(title="Allocator internals", excerpt="How memory is reused.", body="Blocks and pools."),
        "body": PostFactory(title="A long read", excerpt="Notes.", body="Somewhere the allocator caches blocks."),
        "both": PostFactory(title="Cache notes", excerpt="", body="The caching allocator and fragmentation."),
        "none": PostFactory(title="Unrelated", excerpt="", body="Nothing to see about memory here."),
    }
    for n, post in enumerate(made.values()):
        post.published_at = timezone.now() - (10 - n) * hour
        post.save()
    return made


def test_every_word_must_match_somewhere_as_on_the_site(client, posts):
    assert set(titles(client, "allocator")) == {"Allocator internals", "A long read", "Cache notes"}
    assert set(titles(client, "allocators")) == {"Allocator internals", "A long read", "Cache notes"}  # stemmed
    assert set(titles(client, "pool")) == {"Allocator internals"}  # a word only in a body
    assert set(titles(client, "fragmenting caches")) == {"Cache notes"}
    assert set(titles(client, "allocator memory")) == {"Allocator internals"}  # title + excerpt
    assert titles(client, "zeppelin") == []
    for query in ("allocator", "allocator memory", "allocator blocks", "caching"):  # the same posts as the site finds
        assert set(titles(client, query)) == {hit.title for hit in search.search(query).posts}


def test_no_longer_a_substring_match(client, posts):
    assert titles(client, "llocat") == []  # a fragment of a word is not a word


@ON_POSTGRES
def test_ranked_best_first_with_the_sites_operators(client, posts):
    assert titles(client, "allocator")[0] == "Allocator internals"  # title (weight A) before body (C)
    assert set(titles(client, "allocator -fragmentation")) == {"Allocator internals", "A long read"}
    assert set(titles(client, '"allocator internals"')) == {"Allocator internals"}  # a phrase
    assert set(titles(client, '"internals allocator"')) == set()  # its words in another order
    assert set(titles(client, "fragmentation or pools")) == {"Cache notes", "Allocator internals"}
    assert titles(client, "allocator") == [hit.title for hit in search.search("allocator").posts]  # the site's order


@ON_POSTGRES
def test_the_cursor_walks_the_ranked_order_without_gaps_or_repeats(client, posts):
    ranked = titles(client, "allocator")
    walked, cursor = [], None
    while True:
        params = {"q": "allocator", "limit": 1, **({"cursor": cursor} if cursor else {})}
        page = client.get("/api/v1/posts/", params).json()
        walked += [item["title"] for item in page["items"]]
        assert page["count"] == 3
        cursor = page["next_cursor"]
        if cursor is None:
            break
    assert walked == ranked


@pytest.mark.parametrize("q", ["allocator", '"caching allocator" -memory'])
def test_query_count_does_not_grow_with_matches(client, q):
    def queries() -> int:
        with CaptureQueriesContext(connection) as captured:
            assert client.get("/api/v1/posts/", {"q": q}).status_code == 200
        return len(captured)

    for _ in range(3):
        PostFactory(body="The caching allocator.")
    few = queries()
    for _ in range(27):
        PostFactory(body="The caching allocator.")
    assert queries() == few
