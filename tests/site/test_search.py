"""/search/?q=: published posts, digests and references; PostgreSQL full text or the SQLite fallback."""
import pytest
from django.db import connection

from blog.factories import PostFactory
from digests.factories import DigestReferenceFactory, ReferenceFactory
from repojournal import search

from .helpers import visible_text

ON_POSTGRES = pytest.mark.skipif(
    connection.vendor != "postgresql", reason="PostgreSQL full-text features (ranking, websearch, GIN); CI runs them"
)


def hits(client, query: str) -> str:
    response = client.get("/search/", {"q": query})
    assert response.status_code == 200
    return response.content.decode()


@pytest.mark.django_db
def test_search_finds_posts_digests_and_references_by_their_words(client, site):
    site.posts[0].body = "Fragmentation in the caching allocator explained."
    site.posts[0].save()
    results = search.search("allocator")
    assert [hit.title for hit in results.posts] == ["Eager CUDA memory"]
    results = search.search("Published summary")
    assert {hit.title for hit in results.digests} == {digest.headline for digest in site.digests}
    results = search.search("change 2")
    assert any(hit.title == "Published headline 1 change 2" for hit in results.references)
    html = hits(client, "allocator")
    assert "1 result for “allocator”" in visible_text(html)
    assert "<mark>" in html and 'href="/posts/eager-cuda-memory/"' in html


@pytest.mark.django_db
def test_search_matches_words_in_any_case_and_all_words_are_required(client, site):
    assert [hit.title for hit in search.search("EAGER cuda").posts] == ["Eager CUDA memory"]
    assert search.search("eager zebra").count == 0


@pytest.mark.django_db
@pytest.mark.parametrize("query", ["", "   ", "!!!", "\x00", "a" * 5000, "\"unbalanced", "-", "or or or", "☃ 漢字",
                                   "<script>alert(1)</script>", "'; DROP TABLE blog_post; --"])
def test_odd_queries_never_fail(client, site, query):
    response = client.get("/search/", {"q": query})
    assert response.status_code == 200
    assert "<script>alert(1)</script>" not in response.content.decode()


@pytest.mark.django_db
def test_snippets_escape_hostile_source_text_and_mark_matches(client, site):
    PostFactory(title="Hostile", body="zebrafish <img src=x onerror=alert(1)> <script>alert(2)</script> zebrafish")
    html = hits(client, "zebrafish")
    assert "onerror=alert(1)>" not in html and "<script>alert(2)" not in html
    assert "<mark>" in html


def test_mark_sentinels_escapes_then_marks_only_balanced_pairs():
    text = f"<b>{search.START}hit{search.STOP}</b> {search.START}stray"
    assert search.mark_sentinels(text) == "&lt;b&gt;<mark>hit</mark>&lt;/b&gt; stray"


def test_plain_snippet_centres_on_the_first_match():
    words = " ".join(f"w{n}" for n in range(100)) + " target " + " ".join(f"v{n}" for n in range(100))
    snippet = search.plain_snippet(words, ["target"])
    assert snippet.startswith("… ") and snippet.endswith(" …") and "<mark>target</mark>" in snippet


@ON_POSTGRES
@pytest.mark.django_db
def test_postgres_ranks_title_matches_above_body_matches(site):
    body_only = PostFactory(title="Unrelated title", body="A note about quokkas.")
    in_title = PostFactory(title="Quokkas everywhere", body="Nothing here.")
    assert [hit.title for hit in search.search("quokka").posts] == [in_title.title, body_only.title]


@ON_POSTGRES
@pytest.mark.django_db
def test_postgres_understands_websearch_syntax(site):
    PostFactory(title="Weight sync overlap", body="weight sync with deepep")
    PostFactory(title="Sync of weights", body="the weight is in sync")
    assert [h.title for h in search.search('"weight sync"').posts] == ["Weight sync overlap"]
    assert [h.title for h in search.search("weight -deepep").posts] == ["Sync of weights"]
    assert {h.title for h in search.search("overlap or weights").posts} == {"Weight sync overlap", "Sync of weights"}


@ON_POSTGRES
@pytest.mark.django_db
def test_postgres_snippets_highlight_stemmed_matches(site):
    PostFactory(title="Allocators", body="The caching allocator allocates blocks; allocation patterns fragment it.")
    snippet = search.search("allocation").posts[0].snippet
    assert "<mark>allocation</mark>" in snippet and "<mark>allocator</mark>" in snippet


@ON_POSTGRES
@pytest.mark.django_db
def test_postgres_search_uses_the_gin_indexes(site):
    from django.contrib.postgres.search import SearchQuery

    from blog.models import Post
    from digests.models import Digest, Reference

    query = SearchQuery("cuda", search_type="websearch", config=search.CONFIG)
    with connection.cursor() as cursor:
        cursor.execute("SET enable_seqscan = off")
    for model in (Post, Digest, Reference):
        plan = model.objects.annotate(document=search.StoredVector()).filter(document=query).explain()
        assert f"{model._meta.db_table}_search_vector_gin" in plan, plan


@ON_POSTGRES
@pytest.mark.django_db
def test_postgres_keeps_the_stored_vector_current_even_for_bulk_updates(site):
    from blog.models import Post

    Post.objects.filter(pk=site.posts[0].pk).update(title="Wombat sightings")  # update() skips save()
    assert [hit.title for hit in search.search("wombat").posts] == ["Wombat sightings"]


@pytest.mark.django_db
def test_references_of_unpublished_digests_are_not_searchable(site):
    hidden_ref = ReferenceFactory(title="Platypus refactor")
    DigestReferenceFactory(digest=site.hidden_digests["draft"], reference=hidden_ref, number=9)
    assert search.search("platypus").count == 0
    DigestReferenceFactory(digest=site.digests[0], reference=hidden_ref, number=9)
    assert [hit.title for hit in search.search("platypus").references] == ["Platypus refactor"]
