"""Site search over published posts, digests and references.

The query's parsing and matching are ``publishing.search``'s (the API's ``q`` shares them).
On PostgreSQL: a weighted full-text search (title A, summary/excerpt B, body C)
in ``websearch_to_tsquery`` syntax ("quoted phrases", -exclusions, or), over
stored, generated ``search_vector`` columns with GIN indexes (see
search_migrations). On SQLite: every word of the query but stop words must be
in a row's FTS5 index, where words are stemmed (the Porter stemmer, as
PostgreSQL's english configuration stems ordinary words: "allocators" finds
"allocator"); newest first, with a snippet around the first word whose Porter
stem is a query word's.

What a search costs must not grow with the archive, so on PostgreSQL each kind
**ranks only its newest matches**: the newest 20 posts (by publication), the
newest 20 digests and the 10 references most recently cited by a published
digest (CANDIDATES_PER_KIND), and shows the best RESULTS_PER_KIND (10) of those.
A news site's readers mostly want recent items; an older item is still found
when fewer newer ones match (a rare word, a phrase, more words), but not when
many newer ones do, however well it would rank. Finding the newest matches
walks an index newest first and checks each row's stored vector, so the work is
the bound divided by the share of rows matching, the same at any archive size
(for a rare query PostgreSQL takes the few matches from the GIN index instead).
20 is two candidates per hit shown for posts and digests. References get 10 —
the newest 10 matches, best first — because they are the dear part: short
texts match less often, so for the benchmark's query about 25 citations are
checked per match (~250 rows at 10). Ten hits per kind (thirty on a page) is
what a reader scans before refining the query; twenty per kind, from twice the
candidates, cost about half as much again per search (docs/benchmarks.md).
References are walked in ``SearchCitation``, a narrow copy of the citations
with the citing digest's order and state and the reference's vector that
triggers keep true, so each check reads one short row instead of a citation,
then a wide reference row and its TOAST. The vectors of
posts, digests and references are stored in their rows (storage MAIN), not in
TOAST, for the same reason. All three kinds are one hand-written ``UNION ALL``
statement (``_statement``): each kind ranks its candidates from the vectors
the walk already read and reads the snippet source of its shown rows only.

Snippets are cut in Python from the first SNIPPET_SOURCE_CHARS of the shown
rows' text, marking the words whose Snowball ``english`` stem (PyStemmer, the
algorithm of PostgreSQL's english configuration) is one of the query's lexemes,
as ``ts_headline`` would; ``ts_headline`` itself re-parsed every text and cost
more than everything else together. Source text, much of it written by
strangers, is escaped first and only our own ``<mark>`` elements are added after.
"""
import functools
import html
from urllib.parse import quote
from dataclasses import dataclass, field

from django.db import connection, connections, router
from django.urls import reverse
from django.utils import timezone
from django.utils.html import conditional_escape
from django.utils.safestring import SafeString

from blog.models import SEARCH_FIELDS, Post
from digests.cards import display_title
from digests.models import Digest, Reference, Repository

from publishing.search import TSQUERY_SQL, clean_query, fts_match, query_words
from publishing.workflow import Status

from .highlighting import SNIPPET_SOURCE_CHARS, highlighter, porter_highlighter

RESULTS_PER_KIND = 10
#: PostgreSQL ranks only the newest this-many matches of each kind (see the module docstring).
CANDIDATES_PER_KIND = {"posts": 20, "digests": 20, "references": 10}


#: Searched fields and their weights; the migrations index frozen copies of them: weighted vectors on
#: PostgreSQL, FTS5 tables (no weights: SQLite does not rank) on SQLite.
POST_FIELDS = SEARCH_FIELDS
DIGEST_FIELDS = {"headline": "A", "summary": "B", "body": "C"}
REFERENCE_FIELDS = {"title": "A", "body": "C"}


@dataclass(frozen=True)
class Hit:
    title: str
    url: str
    snippet: SafeString
    meta: str = ""

    @property
    def html(self) -> SafeString:
        """The hit's list item, every part escaped (the snippet is already safe: see ``Highlighter``).

        Built here rather than by a template loop: a page shows up to 30 hits, and
        the template engine's four variable lookups per hit (or ``format_html``'s
        lazy-aware escaping) cost more than the rest of rendering the page.
        """
        escaped = map(html.escape, (self.url, self.title, self.meta))
        return SafeString(HIT_HTML.format(*escaped, conditional_escape(self.snippet)))


HIT_HTML = '<li class="hit"><a href="{}">{}</a> <span class="meta">{}</span><p class="snippet">{}</p></li>'


@dataclass
class Results:
    query: str
    posts: list[Hit] = field(default_factory=list)
    digests: list[Hit] = field(default_factory=list)
    references: list[Hit] = field(default_factory=list)

    @property
    def count(self) -> int:
        return len(self.posts) + len(self.digests) + len(self.references)

    @property
    def sections(self) -> list[tuple[str, str, SafeString]]:
        """(id, heading, list items) of the kinds with hits, in page order (see ``Hit.html``)."""
        kinds = [("digests", "Digests", self.digests), ("posts", "Posts", self.posts),
                 ("references", "References", self.references)]
        return [(key, heading, SafeString("".join(hit.html for hit in hits))) for key, heading, hits in kinds if hits]


def search(raw_query: str | None) -> Results:
    query = clean_query(raw_query)
    if not query:
        return Results(query="")
    backend = _search_postgres if connection.vendor == "postgresql" else _search_sqlite
    return backend(query)


# PostgreSQL ----------------------------------------------------------------------------

#: One kind's hits: its newest CANDIDATES_PER_KIND matches (``newest``, the bound on the work),
#: the best RESULTS_PER_KIND of those by rank (``best``), then the shown rows' snippet source.
#: ``newest`` walks the ``{order}`` index newest first, checking each row's stored vector, or
#: for a rare query takes the few matches from the GIN index: PostgreSQL decides per query
#: (custom plans, see PLAN_GUARD_SQL), from the tsquery, which the bound parameter makes a
#: constant. The walk carries the shown columns (pointers to their TOAST, not the text), so
#: no second read of the row and no join to plan; only the 20 shown rows' source is cut.
#: A phrase ("codegen decay": ``<->`` in the tsquery) matches far fewer rows than its words
#: together, but PostgreSQL estimates it as their AND, so for a rare phrase it walked every row
#: (~100-160 ms for posts on the benchmark archive). The last condition states the match once
#: more for a phrase only (for other queries it folds to true when planned): PostgreSQL then
#: estimates the phrase as rarer (the AND's share squared) and takes its candidates from the
#: GIN index when the words are not common (~30-60 ms there). Results do not change, only the plan.
#: ``{kind}`` etc. are filled in once per process from the constants below, never from a request.
KIND_SQL = """(SELECT '{kind}', best.id, best.rank, {columns},
    LEFT({source}, %(source_chars)s), querytree({tsquery})::text
FROM (SELECT id, ts_rank(search_vector, {tsquery}) AS rank, {carried}
      FROM (SELECT id, search_vector, {carried} FROM {table}
            WHERE published_at <= %(now)s AND status = %(published)s AND search_vector @@ {tsquery}{guard}
            AND (strpos(querytree({tsquery}), '<') = 0 OR search_vector @@ {tsquery})
            ORDER BY {order} LIMIT {candidates}) newest
      ORDER BY rank DESC, id DESC LIMIT %(results)s) best{joins})"""

#: References: the newest citations by published digests (``SearchCitation``: its order,
#: state and each reference's vector, see ``digests.models.SearchCitation``); a reference
#: cited twice among them is one candidate. Its vector is the reference's own (the triggers
#: copy it), so ranking needs no reference row; only the shown ones are read. A query few
#: citations match takes them from their GIN index (``add_citation_search_index``), a phrase
#: as for the other kinds.
REFERENCES_SQL = """(SELECT 'references', t.id, best.rank, t.title, NULL, repository.full_name, t.url, t.kind, t.number,
    LEFT(COALESCE(t.title, '') || ' ' || COALESCE(t.body, ''), %(source_chars)s), querytree({tsquery})::text
FROM (SELECT reference_id AS id, max(ts_rank(search_vector, {tsquery})) AS rank
      FROM (SELECT reference_id, search_vector FROM digests_searchcitation
            WHERE published_at <= %(now)s AND status = %(published)s AND search_vector @@ {tsquery}
            AND (strpos(querytree({tsquery}), '<') = 0 OR search_vector @@ {tsquery})
            ORDER BY date DESC, published_at DESC, digest_id DESC LIMIT {candidates}) newest
      GROUP BY reference_id ORDER BY rank DESC, id DESC LIMIT %(results)s) best
JOIN digests_reference t ON t.id = best.id
JOIN digests_repository repository ON repository.id = t.repository_id)"""

#: Keeps PostgreSQL on custom plans for this statement once psycopg prepares it
#: (DATABASE_PREPARE_THRESHOLD). Which plan is right depends on the tsquery (walk the
#: newest-first index for a common word, the GIN index for a rare one), and a generic plan
#: cannot see it: measured on the benchmark archive, the generic plan took 425-600 ms per search
#: (GIN bitmap over thousands of rows, the tsquery re-parsed per row, no partial indexes).
#: PostgreSQL's ``auto`` mode switches a prepared statement to its generic plan for good once
#: the average estimated cost of its custom plans exceeds the generic plan's: six searches
#: for ``-python`` (custom cost ~19,000 against ~11,500) did that, for every later search on
#: the connection. A custom plan folds this condition away (the query is never NULL), so it
#: costs nothing; in the generic plan it stays, with a one-time subplan estimated at ~10^7,
#: which no custom plan reaches, so ``auto`` never picks it (and it would never run: the first
#: operand is true). ``plan_cache_mode`` cannot be set for one statement without another query.
PLAN_GUARD_SQL = (
    "\n            AND (%(query)s::text IS NOT NULL OR (SELECT count(*) FROM generate_series(1, 1000000000)) > 0)"
)


@functools.lru_cache(maxsize=8)
def _statement(candidates: tuple) -> str:
    """The three kinds as one ``UNION ALL`` statement: one round trip, one plan.

    Hand-written rather than compiled from querysets: the ORM's form (``pk IN``
    a ranked ``pk IN`` the candidates, two further reads of every candidate row
    and its rank computed twice) cost PostgreSQL about 0.3 ms more planning and
    0.5 ms more execution per search, and its 48 parameters more binding in
    Python. The reader's conditions are ``published()``'s (status and
    publication time, decided at query time), as parameters. Columns a kind
    lacks are NULL; each kind's rows are in no order (the caller sorts).
    """
    bounds = dict(candidates)
    posts = KIND_SQL.format(
        kind="posts", table="blog_post", order="published_at DESC, id DESC", candidates=int(bounds["posts"]),
        carried="title, slug, excerpt, body", columns="best.title, best.slug, NULL, NULL, NULL, NULL::integer",
        joins="", tsquery=TSQUERY_SQL, guard=PLAN_GUARD_SQL,
        source="COALESCE(best.excerpt, '') || ' ' || COALESCE(best.body, '')",
    )
    digests = KIND_SQL.format(
        kind="digests", table="digests_digest", order="date DESC, published_at DESC, id DESC",
        candidates=int(bounds["digests"]), carried="headline, slug, summary, body, topic_id",
        columns="best.headline, best.slug, topic.name, NULL, NULL, NULL::integer",
        joins="\nJOIN digests_topic topic ON topic.id = best.topic_id", tsquery=TSQUERY_SQL, guard="",
        source="COALESCE(best.summary, '') || ' ' || COALESCE(best.body, '')",
    )
    references = REFERENCES_SQL.format(candidates=int(bounds["references"]), tsquery=TSQUERY_SQL)
    return " UNION ALL ".join([posts, digests, references])


def _search_postgres(query: str) -> Results:
    sql = _statement(tuple(CANDIDATES_PER_KIND.items()))
    params = {"query": query, "now": timezone.now(), "published": Status.PUBLISHED.value,
              "results": RESULTS_PER_KIND, "source_chars": SNIPPET_SOURCE_CHARS}
    with connections[router.db_for_read(Post)].cursor() as cursor:  # a replica for readers (repojournal/replicas.py)
        cursor.execute(sql, params)
        rows = cursor.fetchall()
    rows.sort(key=lambda row: (-row[2], -row[1]))  # rank, then newest id, within each kind
    results = Results(query=query)
    post_url, digest_url = slug_url("blog:post"), slug_url("digests:detail")
    for section, _id, _rank, title, slug, label, url, kind, number, source, lexemes in rows:
        snippet = highlighter(lexemes).snippet(source)
        if section == "posts":
            hit = Hit(title, post_url(slug), snippet, "Post")
        elif section == "digests":
            hit = Hit(title, digest_url(slug), snippet, f"The Wire · {label}")
        else:
            title = display_title(kind, title, number)
            hit = Hit(title, url or Repository(full_name=label).get_absolute_url(), snippet, label)
        getattr(results, section).append(hit)
    return results


def slug_url(name: str):
    """``reverse(name, args=[slug])`` as a function of the slug: one ``reverse`` for up to 20 hits."""
    marker = "slug-marker"
    prefix, _, suffix = reverse(name, args=[marker]).partition(marker)
    return lambda slug: f"{prefix}{quote(slug, safe=SLUG_SAFE)}{suffix}"


#: What ``reverse`` leaves unquoted in a path argument.
SLUG_SAFE = "!$&'()*+,;=/~:@"


# SQLite ----------------------------------------------------------------------------------

def _search_sqlite(query: str) -> Results:
    """Every word in the FTS5 index, newest first; snippets mark the words with a query word's Porter stem."""
    words = query_words(query)
    if not words:
        return Results(query=query)
    posts = fts_match(Post.objects.published(), words)[:RESULTS_PER_KIND]
    digests = fts_match(Digest.objects.published().select_related("topic"), words)[:RESULTS_PER_KIND]
    references = fts_match(Reference.objects.published().select_related("repository"), words)[:RESULTS_PER_KIND]
    highlight = porter_highlighter(words)

    def snippet(item) -> SafeString:
        if isinstance(item, Post):
            return highlight.snippet(f"{item.excerpt} {item.body}")
        if isinstance(item, Digest):
            return highlight.snippet(f"{item.summary} {item.body}")
        return highlight.snippet(f"{item.title} {item.body}")

    return _results(query, posts, digests, references, snippet)


def _results(query, posts, digests, references, snippet) -> Results:
    return Results(
        query=query,
        posts=[Hit(post.title, post.get_absolute_url(), snippet(post), "Post") for post in posts],
        digests=[
            Hit(digest.headline, digest.get_absolute_url(), snippet(digest), f"The Wire · {digest.topic.name}")
            for digest in digests
        ],
        references=[
            Hit(ref.display_title, ref.url or ref.repository.get_absolute_url(), snippet(ref), ref.repository.full_name)
            for ref in references
        ],
    )
