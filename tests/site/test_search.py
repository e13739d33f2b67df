"""/search/?q=: published posts, digests and references; PostgreSQL full text or SQLite's FTS5 index."""
import datetime

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from blog.factories import PostFactory
from digests.factories import DigestReferenceFactory, ReferenceFactory
from digests.models import Reference, SearchCitation
from reader import highlighting, search
from publishing.workflow import Status

from .conftest import make_digest
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


def test_porter_highlighter_marks_the_words_sqlite_matched():
    """SQLite's FTS5 stems with the original Porter algorithm: the marks follow its stems, not ``english``'s."""
    highlight = highlighting.porter_highlighter(["allocators", "platypuses"])
    snippet = highlight.snippet("The Allocator allocates; a platypus, two platypuses; allow allocation.")
    assert snippet == ("The <mark>Allocator</mark> <mark>allocates</mark>; a platypus, two <mark>platypuses</mark>; "
                       "allow <mark>allocation</mark>.")


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
    with connection.cursor() as cursor:
        cursor.execute("SET enable_seqscan = off")
        for table in ("blog_post", "digests_digest", "digests_reference", "digests_searchcitation"):
            cursor.execute(f"EXPLAIN SELECT 1 FROM {table} WHERE search_vector @@ {search.TSQUERY_SQL}", {"query": "cuda"})
            plan = "\n".join(row[0] for row in cursor.fetchall())
            assert f"{table}_search_vector_gin" in plan, plan


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


def test_highlighter_marks_every_word_with_a_query_stem_and_nothing_else():
    highlight = highlighting.Highlighter(frozenset({"alloc", "block"}))
    snippet = highlight.snippet("The caching Allocator allocates blocks; allow allocation, not blockchain.")
    assert snippet == ("The caching <mark>Allocator</mark> <mark>allocates</mark> <mark>blocks</mark>; allow "
                       "<mark>allocation</mark>, not blockchain.")


def test_highlighter_takes_candidate_words_left_to_right_as_a_regular_expression_would():
    """Candidates are found with ``str.find`` per prefix; these marks are what ``(?:prefixes)\\w*`` gave."""
    snippet = highlighting.Highlighter(frozenset({"it's", "it"})).snippet("It's its it, it'd <it's> aaaa")
    assert snippet == ("<mark>It</mark>&#x27;s <mark>its</mark> <mark>it</mark>, <mark>it</mark>&#x27;d "
                       "&lt;<mark>it</mark>&#x27;s&gt; aaaa")
    text = "aaaaa decdecay decay_x xdecay Decays aaa"
    assert list(highlighting.Highlighter(frozenset({"aaa", "decay"})).spans(text)) == [(30, 36), (37, 40)]


def test_highlighter_escapes_source_text_around_and_inside_marks():
    snippet = highlighting.Highlighter(frozenset({"zebra"})).snippet('<b onmouseover="x">zebras</b> & <script>zebra</script>')
    assert snippet == ('&lt;b onmouseover=&quot;x&quot;&gt;<mark>zebras</mark>&lt;/b&gt; &amp; '
                       '&lt;script&gt;<mark>zebra</mark>&lt;/script&gt;')


def test_highlighter_centres_on_the_first_match_and_shows_the_start_without_one():
    text = " ".join(f"w{n}" for n in range(100)) + " targets " + " ".join(f"v{n}" for n in range(100))
    snippet = highlighting.Highlighter(frozenset({"target"})).snippet(text)
    assert snippet.startswith("… w90 ") and snippet.endswith(" …") and "<mark>targets</mark>" in snippet
    assert highlighting.Highlighter(frozenset({"absent"})).snippet(text).startswith("w0 w1 ")
    assert highlighting.Highlighter(frozenset()).snippet("<i>") == "&lt;i&gt;"


def test_highlighter_marks_the_same_words_when_lower_casing_changes_the_length():
    snippet = highlighting.Highlighter(frozenset({"zebra"})).snippet("İstanbul zebras <zebra> xzebra Zebra_x ZEBRA")
    assert snippet == "İstanbul <mark>zebras</mark> &lt;<mark>zebra</mark>&gt; xzebra Zebra_x <mark>ZEBRA</mark>"
    snippet = highlighting.Highlighter(frozenset({"zebra"})).snippet("Stanbul zebras <zebra> xzebra Zebra_x ZEBRA")
    assert snippet == "Stanbul <mark>zebras</mark> &lt;<mark>zebra</mark>&gt; xzebra Zebra_x <mark>ZEBRA</mark>"


def test_hit_html_escapes_every_part_but_the_already_safe_snippet():
    from django.utils.safestring import mark_safe

    hit = search.Hit(title="<b>T</b>", url='https://x.org/?a=1&b="2"', snippet=mark_safe("<mark>s</mark>"),
                     meta="o'r/n")
    assert hit.html == ('<li class="hit"><a href="https://x.org/?a=1&amp;b=&quot;2&quot;">&lt;b&gt;T&lt;/b&gt;</a> '
                        '<span class="meta">o&#x27;r/n</span><p class="snippet"><mark>s</mark></p></li>')
    assert "&lt;i&gt;" in search.Hit("t", "/", "<i>").html  # a snippet not marked safe is escaped too


def test_query_lexemes_reads_postgres_querytree_text():
    assert highlighting.query_lexemes("'alloc' & ( 'it''s' | 'cuda' )") == {"alloc", "it's", "cuda"}
    assert highlighting.query_lexemes("T") == set()  # querytree of a query with only negations or stop words


@ON_POSTGRES
@pytest.mark.django_db
def test_postgres_search_is_one_query_whatever_the_number_of_matches(site):
    PostFactory(title="Numbat one", body="numbat")
    with CaptureQueriesContext(connection) as few:
        search.search("numbat")
    for n in range(25):
        PostFactory(title=f"Numbat {n}", body="numbat sighting")
    with CaptureQueriesContext(connection) as many:
        results = search.search("numbat")
    assert len(few) == len(many) == 1
    assert len(results.posts) == search.RESULTS_PER_KIND


@ON_POSTGRES
@pytest.mark.django_db
def test_postgres_ranks_only_the_newest_candidates(site, monkeypatch):
    now = timezone.now()
    best_but_old = PostFactory(title="Quoll quoll", body="quoll", published_at=now - datetime.timedelta(days=30))
    newer = [PostFactory(title=f"Other {n}", body="a quoll note", published_at=now - datetime.timedelta(days=n))
             for n in (2, 1)]
    assert [hit.title for hit in search.search("quoll").posts][0] == best_but_old.title
    monkeypatch.setitem(search.CANDIDATES_PER_KIND, "posts", 2)
    assert {hit.title for hit in search.search("quoll").posts} == {post.title for post in newer}


@ON_POSTGRES
@pytest.mark.django_db
def test_postgres_reference_candidates_are_those_cited_by_the_newest_published_digests(site, monkeypatch):
    old = make_digest(site.topic, site.repositories, n_refs=1, headline="Old", date=datetime.date(2020, 1, 1))
    new = make_digest(site.topic, site.repositories, n_refs=2, headline="New", date=datetime.date(2024, 1, 1))
    Reference.objects.filter(citations__digest=old).update(title="Bilby bilby bilby")
    Reference.objects.filter(citations__digest=new).update(body="one bilby")
    assert search.search("bilby").references[0].title == "Bilby bilby bilby"
    monkeypatch.setitem(search.CANDIDATES_PER_KIND, "references", 2)
    assert {hit.title for hit in search.search("bilby").references} == {"New change 1", "New change 2"}


@ON_POSTGRES
@pytest.mark.django_db
def test_postgres_snippets_come_from_a_bounded_prefix_of_the_text(site):
    PostFactory(title="Dugong facts", excerpt="", body="word " * highlighting.SNIPPET_SOURCE_CHARS + "dugong")
    [hit] = search.search("dugong").posts
    assert "<mark>" not in hit.snippet and hit.snippet.startswith("word word")


@ON_POSTGRES
@pytest.mark.django_db
def test_postgres_snippets_of_hostile_text_are_escaped_and_marked(client, site):
    PostFactory(title="Hostile", excerpt="", body='<img src=x onerror="alert(1)">okapi</img> <script>okapi()</script>')
    html = hits(client, "okapi")
    assert "<img src=x" not in html and "<script>okapi" not in html
    assert "&lt;img src=x onerror=&quot;alert(1)&quot;&gt;<mark>okapi</mark>" in html


@pytest.mark.parametrize("slug", ["eager-cuda-memory", "a_b-9", "X"])
def test_slug_url_is_reverse_with_one_call(slug):
    from django.urls import reverse

    for name in ("blog:post", "digests:detail"):
        assert search.slug_url(name)(slug) == reverse(name, args=[slug])


@ON_POSTGRES
@pytest.mark.django_db
def test_the_reference_walk_sees_exactly_the_published_references(site):
    """PostgreSQL walks references through ``SearchCitation`` instead of ``published()``'s ``IN``: same rows."""
    for number, (label, digest) in enumerate(site.hidden_digests.items(), start=20):
        DigestReferenceFactory(digest=digest, reference=ReferenceFactory(title=f"Quoll only {label}"), number=9)
        shared = ReferenceFactory(title=f"Quoll also {label}")  # cited by a hidden and a published digest
        DigestReferenceFactory(digest=digest, reference=shared, number=10)
        DigestReferenceFactory(digest=site.digests[0], reference=shared, number=number)
    found = {hit.title for hit in search.search("quoll").references}
    published = set(Reference.objects.published().filter(title__startswith="Quoll").values_list("title", flat=True))
    assert found == published == {f"Quoll also {label}" for label in site.hidden_digests}


@ON_POSTGRES
@pytest.mark.django_db
def test_a_reference_cited_by_several_of_the_newest_digests_is_one_hit(site):
    reference = ReferenceFactory(title="Numbat refactor")
    for number, digest in enumerate(site.digests, start=50):
        DigestReferenceFactory(digest=digest, reference=reference, number=number)
    assert len(site.digests) > 1
    assert [hit.title for hit in search.search("numbat").references] == ["Numbat refactor"]


def test_the_statement_is_built_from_constants_only():
    """The kinds' SQL is filled in from module constants; the reader's query is always a bound parameter."""
    sql = search._statement(tuple(search.CANDIDATES_PER_KIND.items()))
    assert sql.count("%(query)s") == 16 and "{" not in sql  # three per kind, two more per kind for a phrase, the guard
    bounds = search.CANDIDATES_PER_KIND
    assert f"LIMIT {bounds['posts']}) newest" in sql and f"LIMIT {bounds['references']}) newest" in sql


@ON_POSTGRES
@pytest.mark.django_db
def test_search_citations_follow_citations_digests_and_references_through_bulk_writes(site):
    """Triggers keep the narrow copy true; ``update()``, ``bulk_create`` and ``delete()`` send no signals."""
    from digests.models import Digest, DigestReference

    def found(query: str) -> list[str]:
        return [hit.title for hit in search.search(query).references]

    digest = Digest.objects.filter(pk=site.digests[0].pk)
    reference = ReferenceFactory(title="Wallaby refactor")
    citation = DigestReferenceFactory(digest=site.digests[0], reference=reference, number=30)
    assert found("wallaby") == ["Wallaby refactor"]
    Reference.objects.filter(pk=reference.pk).update(title="Quokka refactor")
    assert found("wallaby") == [] and found("quokka") == ["Quokka refactor"]
    digest.update(status=Status.DRAFT)
    assert found("quokka") == []
    digest.update(status=Status.PUBLISHED, published_at=timezone.now() + datetime.timedelta(days=1))
    assert found("quokka") == []  # scheduled: decided at query time
    digest.update(published_at=timezone.now() - datetime.timedelta(days=1))
    assert found("quokka") == ["Quokka refactor"]
    DigestReference.objects.filter(pk=citation.pk).delete()
    assert found("quokka") == []
    DigestReference.objects.bulk_create([DigestReference(digest=site.digests[1], reference=reference, number=31)])
    assert found("quokka") == ["Quokka refactor"]
    DigestReference.objects.filter(reference=reference).update(digest=site.hidden_digests["draft"])
    assert found("quokka") == []
    assert SearchCitation.objects.count() == DigestReference.objects.count()


@ON_POSTGRES
@pytest.mark.django_db
def test_search_citations_are_emptied_with_the_citations_even_in_one_truncate(site):
    with connection.cursor() as cursor:
        cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")  # no deferred foreign key checks pending: TRUNCATE refuses
        cursor.execute("TRUNCATE digests_digestreference, digests_searchcitation")  # as Django's flush does
        assert SearchCitation.objects.count() == 0
        DigestReferenceFactory(digest=site.digests[0], reference=ReferenceFactory(), number=40)
        assert SearchCitation.objects.count() == 1
        cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
        cursor.execute("TRUNCATE digests_digestreference")
    assert SearchCitation.objects.count() == 0


def test_highlighter_excerpt_keeps_the_token_a_match_starts_inside_and_counts_words_exactly():
    words = [f"w{n}" for n in range(40)]
    text = " ".join(words[:15]) + "\n(zebra) " + " ".join(words[15:])
    highlighter = highlighting.Highlighter(frozenset({"zebra"}))
    assert highlighter.snippet(text) == (
        "… w5 w6 w7 w8 w9 w10 w11 w12 w13 w14 (<mark>zebra</mark>) " + " ".join(words[15:34]) + " …"
    )
    exactly = " ".join(words[:10]) + " zebra " + " ".join(words[10:29])  # 30 words: nothing follows
    assert highlighter.snippet(exactly) == " ".join(words[:10]) + " <mark>zebra</mark> " + " ".join(words[10:29])
    assert highlighter.snippet(exactly + " more").endswith("w28 …")
    assert highlighter.snippet("zebra,zebra  x") == "<mark>zebra</mark>,<mark>zebra</mark> x"


def test_highlighter_remembers_words_but_no_more_than_its_bound(monkeypatch):
    monkeypatch.setattr(highlighting, "MAX_KNOWN_WORDS", 3)
    highlighter = highlighting.Highlighter(frozenset({"zebra"}))
    assert highlighter.snippet("zebras zebu zebrafish zeb zebra") == (
        "<mark>zebras</mark> zebu zebrafish zeb <mark>zebra</mark>"
    )
    assert len(highlighter.known) <= 3


@ON_POSTGRES
@pytest.mark.django_db
def test_postgres_search_stays_on_custom_plans_once_prepared(site):
    """The right plan depends on the tsquery; ``auto`` plan caching must never settle on the generic one.

    psycopg prepares the statement after DATABASE_PREPARE_THRESHOLD runs. Queries whose custom plans
    PostgreSQL estimates as dear (only negations) used to tip it to the generic plan for good.
    """
    PostFactory(title="Numbat", body="numbat")
    sql = search._statement(tuple(search.CANDIDATES_PER_KIND.items()))
    params = {"now": timezone.now(), "published": Status.PUBLISHED.value, "results": search.RESULTS_PER_KIND,
              "source_chars": highlighting.SNIPPET_SOURCE_CHARS}
    with connection.cursor() as cursor:
        for query in ["-numbat", "-numbat -x", "-zebra"] * 3 + ["numbat"]:
            cursor.cursor.execute(sql, {**params, "query": query}, prepare=True)
            rows = cursor.fetchall()
        assert [row[3] for row in rows] == ["Numbat"]
        # psycopg sends the statement with $n placeholders: find it by a part without any
        cursor.execute("SELECT generic_plans, custom_plans FROM pg_prepared_statements WHERE statement LIKE %s",
                       ["%querytree(websearch_to_tsquery%"])
        assert cursor.fetchall() == [(0, 10)]


@ON_POSTGRES
@pytest.mark.django_db
def test_postgres_generic_plan_of_the_statement_is_priced_out(site):
    """The guard folds away in a custom plan and makes the generic plan dearer than any custom one."""
    import re

    import psycopg

    sql = search._statement(tuple(search.CANDIDATES_PER_KIND.items()))
    names = list(dict.fromkeys(re.findall(r"%\((\w+)\)s", sql)))
    types = {"query": "text", "now": "timestamptz", "published": "text", "results": "int", "source_chars": "int"}
    numbered = re.sub(r"%\((\w+)\)s", lambda match: f"${names.index(match.group(1)) + 1}", sql)
    values = {"now": timezone.now(), "published": Status.PUBLISHED.value, "results": search.RESULTS_PER_KIND,
              "source_chars": highlighting.SNIPPET_SOURCE_CHARS}

    def cost(query: str) -> float:
        arguments = [query if name == "query" else values[name] for name in names]
        literal.execute(f"EXPLAIN EXECUTE guarded({', '.join(['%s'] * len(names))})", arguments)
        plan = "\n".join(row[0] for row in literal.fetchall())
        assert ("generate_series" in plan) == generic, plan
        return float(re.search(r"cost=[\d.]+\.\.([\d.]+)", plan).group(1))

    with connection.cursor() as cursor, psycopg.ClientCursor(connection.connection) as literal:
        # EXPLAIN takes no bound parameters, hence literals (ClientCursor); PREPARE goes over the
        # simple protocol: over the extended one, the body's $n would be this statement's parameters.
        prepare = f"PREPARE guarded({', '.join(types[name] for name in names)}) AS {numbered}"
        assert connection.connection.pgconn.exec_(prepare.encode()).error_message == b""
        cursor.execute("SET LOCAL plan_cache_mode = force_custom_plan")
        generic = False
        custom = max(cost(query) for query in ["numbat", "-numbat", "-numbat -zebra", '"numbat zebra"', "zzz"])
        cursor.execute("SET LOCAL plan_cache_mode = force_generic_plan")
        generic = True
        assert cost("numbat") > 1000 * custom
        cursor.execute("DEALLOCATE guarded")


@ON_POSTGRES
@pytest.mark.django_db
def test_postgres_states_a_phrase_match_twice_so_its_estimate_is_rarer(site):
    """Only a phrase's plan keeps the extra match condition; other queries' plans fold it away."""
    for n in range(30):
        PostFactory(title=f"Numbat {n}", body="numbat wombat" if n % 10 == 0 else "wombat and numbat")
    sql = search._statement(tuple(search.CANDIDATES_PER_KIND.items()))
    params = {"now": timezone.now(), "published": Status.PUBLISHED.value, "results": search.RESULTS_PER_KIND,
              "source_chars": highlighting.SNIPPET_SOURCE_CHARS}

    def matches_in_plan(query: str) -> int:
        with connection.cursor() as cursor:
            cursor.execute("EXPLAIN " + sql, {**params, "query": query})
            return "\n".join(row[0] for row in cursor.fetchall()).count("@@")

    assert matches_in_plan('"numbat wombat"') == matches_in_plan("numbat wombat") + 3  # each kind
    assert matches_in_plan("numbat -wombat") == matches_in_plan("numbat wombat")
    assert {hit.title for hit in search.search('"numbat wombat"').posts} == {"Numbat 0", "Numbat 10", "Numbat 20"}
    assert len(search.search("numbat wombat").posts) == search.RESULTS_PER_KIND
