"""Site search over published posts, digests and references.

On PostgreSQL: a weighted full-text search (title A, summary/excerpt B, body C)
in ``websearch_to_tsquery`` syntax ("quoted phrases", -exclusions, or), over
stored, generated ``search_vector`` columns with GIN indexes (see
search_migrations). On SQLite: every word must appear somewhere, newest first,
with a plain snippet around the first match.

What a search costs must not grow with the archive, so on PostgreSQL each kind
**ranks only its newest matches**: the newest 40 posts (by publication), the
newest 40 digests and the 20 references most recently cited by a published
digest (CANDIDATES_PER_KIND), and shows the best RESULTS_PER_KIND (20) of those.
A news site's readers mostly want recent items; an older item is still found
when fewer newer ones match (a rare word, a phrase, more words), but not when
many newer ones do, however well it would rank. Finding the newest matches
walks an index newest first and checks each row's stored vector, so the work is
the bound divided by the share of rows matching, the same at any archive size
(for a rare query PostgreSQL takes the few matches from the GIN index instead).
40 is two candidates per hit shown for posts and digests. References get 20 —
the newest 20 matches, best first — because they are the dear part: short
texts match less often, so for the benchmark's query about 25 citations are
checked per match (~500 rows at 20). They are walked in ``SearchCitation``, a
narrow copy of the citations with the citing digest's order and state and the
reference's vector that triggers keep true, so each check reads one short row
instead of a citation, then a wide reference row and its TOAST. The vectors of
posts, digests and references are stored in their rows (storage MAIN), not in
TOAST, for the same reason. All three kinds are one ``UNION ALL`` statement,
compiled from the querysets once per process; each reads the snippet source
of its shown rows only.

Snippets are cut in Python from the first SNIPPET_SOURCE_CHARS of the shown
rows' text, marking the words whose Snowball ``english`` stem (PyStemmer, the
algorithm of PostgreSQL's english configuration) is one of the query's lexemes,
as ``ts_headline`` would; ``ts_headline`` itself re-parsed every text and cost
more than everything else together. Source text, much of it written by
strangers, is escaped first and only our own ``<mark>`` elements are added after.
"""
import datetime
import functools
import html
import re
import threading
from urllib.parse import quote
from dataclasses import dataclass, field

import Stemmer
from django.contrib.postgres.search import SearchQuery, SearchRank, SearchVectorField
from django.db import connection, models
from django.db.models.expressions import Col, Func, RawSQL
from django.db.models.functions import Cast, Concat, Left
from django.urls import reverse
from django.utils import timezone
from django.utils.html import conditional_escape, escape
from django.utils.safestring import SafeString, mark_safe

from blog.models import Post
from digests.cards import display_title
from digests.models import Digest, Reference, Repository, SearchCitation

from .search_migrations import COLUMN, CONFIG
from .workflow import Status

MAX_QUERY_LENGTH = 200
MAX_WORDS = 8
RESULTS_PER_KIND = 20
#: PostgreSQL ranks only the newest this-many matches of each kind (see the module docstring).
CANDIDATES_PER_KIND = {"posts": 40, "digests": 40, "references": 20}
SNIPPET_WORDS = 30
#: Snippets are cut from at most this many characters of the start of a hit's text.
SNIPPET_SOURCE_CHARS = 1000
# Control characters no reader types, so they can mark matches through escaping.
START, STOP = "\x02", "\x03"


class StoredVector(models.Expression):
    """The stored ``search_vector`` column of the queryset's own table, under whatever alias it has.

    A column reference, not raw SQL naming the table: inside a subquery the
    table is aliased, and a bare table name would silently point at the outer
    query's row instead.
    """

    output_field = SearchVectorField()

    def resolve_expression(self, query=None, allow_joins=True, reuse=None, summarize=False, for_save=False):
        alias = query.resolve_ref("pk").alias
        column = SearchVectorField()
        column.set_attributes_from_name(COLUMN)
        column.model = query.model
        return Col(alias, column, output_field=SearchVectorField())


#: Searched fields and their weights; the migrations store these vectors (frozen copies) on PostgreSQL.
POST_FIELDS = {"title": "A", "excerpt": "B", "body": "C"}
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

        Built here rather than by a template loop: a page shows up to 60 hits, and
        the template engine's four variable lookups per hit (or ``format_html``'s
        lazy-aware escaping) cost more than the rest of rendering the page.
        """
        escaped = map(html.escape, (self.url, self.title, self.meta))
        return mark_safe(HIT_HTML.format(*escaped, conditional_escape(self.snippet)))


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
        return [(key, heading, mark_safe("".join(hit.html for hit in hits))) for key, heading, hits in kinds if hits]


CONTROL_CHARACTERS = re.compile(r"[\x00-\x1f\x7f]")


def clean_query(raw: str | None) -> str:
    """Whitespace collapsed, control characters (NUL breaks PostgreSQL, sentinels) dropped, length capped."""
    return " ".join(CONTROL_CHARACTERS.sub(" ", raw or "").split())[:MAX_QUERY_LENGTH]


MARKED = re.compile(f"{START}([^{START}{STOP}]*){STOP}")


def mark_sentinels(text: str) -> SafeString:
    """Escape `text`, then turn each START…STOP pair into a ``<mark>``; stray sentinels are dropped."""
    marked = MARKED.sub(lambda match: f"<mark>{match.group(1)}</mark>", escape(text or ""))
    return mark_safe(marked.replace(START, "").replace(STOP, ""))


def search(raw_query: str | None) -> Results:
    query = clean_query(raw_query)
    if not query:
        return Results(query="")
    backend = _search_postgres if connection.vendor == "postgresql" else _search_fallback
    return backend(query)


# PostgreSQL ----------------------------------------------------------------------------

def _tsquery(query: str) -> SearchQuery:
    return SearchQuery(query, search_type="websearch", config=CONFIG)


def _matches(queryset, tsquery: SearchQuery):
    return queryset.annotate(document=StoredVector()).filter(document=tsquery)


def _best(model, candidates, tsquery: SearchQuery, section: str, source, **shown):
    """The best RESULTS_PER_KIND of the newest CANDIDATES_PER_KIND[section] `candidates`, as HIT_COLUMNS rows.

    `candidates` is the ids of published, matching `model` rows, newest first; its
    LIMIT is what bounds the work: PostgreSQL walks an index newest first and
    stops after that many matches (or, for a rare query, takes the few
    matches from the GIN index), ranks only those, and reads the snippet
    source, a bounded prefix, of the shown rows only.
    """
    blank = Cast(models.Value(None), models.CharField())  # NULL, not a parameter: see _statement
    columns = {"title": blank, "slug": blank, "label": blank, "url": blank, "kind": blank,
               "number": Cast(models.Value(None), models.IntegerField())} | shown
    best = (
        model.objects.filter(pk__in=candidates[: CANDIDATES_PER_KIND[section]])
        .annotate(rank=SearchRank(StoredVector(), tsquery))
        .order_by("-rank", "-id")
        .values("pk")[:RESULTS_PER_KIND]
    )
    return (  # in no order: the caller sorts; the source is read for the shown rows only
        model.objects.filter(pk__in=best)
        .annotate(
            # a literal, not a parameter (see _statement); `section` is one of CANDIDATES_PER_KIND's keys
            hit_section=RawSQL(f"'{section}'", (), output_field=models.CharField()),
            rank=SearchRank(StoredVector(), tsquery),
            source=Left(source, SNIPPET_SOURCE_CHARS),
            lexemes=Cast(Func(tsquery, function="querytree"), models.TextField()),
            **{f"hit_{name}": value for name, value in columns.items()},
        )
        .order_by()
        .values_list(*HIT_COLUMNS)
    )


HIT_COLUMNS = ("hit_section", "id", "rank", "hit_title", "hit_slug", "hit_label", "hit_url", "hit_kind", "hit_number",
               "source", "lexemes")


def _cited_by_published_digests():
    """Citations by published digests, newest first, from ``SearchCitation``: their references are
    ``Reference.objects.published()``, whose ``IN`` form PostgreSQL cannot walk newest first; the narrow
    copy is walked through its partial index and each check reads one short row."""
    return (SearchCitation.objects.filter(status=Status.PUBLISHED, published_at__lte=timezone.now())
            .order_by("-date", "-published_at", "-digest_id"))


def _joined(*names: str) -> Concat:
    """The fields' text joined by spaces: what a snippet is cut from."""
    parts = []
    for name in names:
        parts += [name, models.Value(" ")]
    return Concat(*parts[:-1], output_field=models.TextField())


def _kinds(query: str) -> list:
    """The three ranked queries: posts, digests, references (see ``_best``)."""
    tsquery = _tsquery(query)
    F = models.F
    return [
        _best(Post, _matches(Post.objects.published(), tsquery).order_by("-published_at", "-id").values("pk"),
              tsquery, "posts", _joined("excerpt", "body"), title=F("title"), slug=F("slug")),
        _best(Digest, _matches(Digest.objects.published(), tsquery).order_by("-date", "-published_at", "-id")
              .values("pk"), tsquery, "digests", _joined("summary", "body"),
              title=F("headline"), slug=F("slug"), label=F("topic__name")),
        _best(Reference, _matches(_cited_by_published_digests(), tsquery).values("reference_id"),
              tsquery, "references", _joined("title", "body"),
              title=F("title"), label=F("repository__full_name"), url=F("url"), kind=F("kind"), number=F("number")),
    ]


#: Stands for the reader's query while the SQL is built; cleaned queries have no control characters.
PLACEHOLDER = "\x01query"


@functools.lru_cache(maxsize=8)
def _statement(alias: str, candidates: tuple, results: int, source_chars: int) -> tuple[str, tuple]:
    """One ``UNION ALL`` of the three queries, compiled once per process (and per setting of the bounds).

    Compiling three querysets with subqueries costs more Python than the rest of
    a search; only their parameters change between requests: the query text
    and "now", the publication cut-off (every date parameter here is one).
    Columns a kind lacks are NULL literals, not parameters: psycopg caches its
    parsing of a statement only up to 50 parameters.
    """
    parts, params = [], []
    for queryset in _kinds(PLACEHOLDER):
        sql, part_params = queryset.query.get_compiler(using=alias).as_sql()
        parts.append(f"({sql})")
        params += part_params
    return " UNION ALL ".join(parts), tuple(params)


def _search_postgres(query: str) -> Results:
    bounds = tuple(CANDIDATES_PER_KIND.items())
    sql, template = _statement(connection.alias, bounds, RESULTS_PER_KIND, SNIPPET_SOURCE_CHARS)
    now = timezone.now()
    params = [query if param == PLACEHOLDER else now if isinstance(param, datetime.datetime) else param
              for param in template]
    with connection.cursor() as cursor:
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


_local = threading.local()


def stem(word: str) -> str:
    """The Snowball ``english`` stem of `word`, as PostgreSQL's english configuration makes it."""
    stemmer = getattr(_local, "stemmer", None)
    if stemmer is None:  # Stemmer objects must not be shared between threads
        stemmer = _local.stemmer = Stemmer.Stemmer("english")
    return stemmer.stemWord(word.lower())


LEXEME = re.compile(r"'((?:[^']|'')+)'")


def query_lexemes(querytree: str) -> frozenset[str]:
    """The lexemes in PostgreSQL's ``querytree()`` text, e.g. ``'alloc' & 'cuda'`` (it leaves negated terms out)."""
    return frozenset(match.replace("''", "'") for match in LEXEME.findall(querytree or ""))


class Highlighter:
    """Marks the words whose Snowball stem is one of the query's lexemes, like ``ts_headline``.

    ``ts_headline`` re-parses each text with PostgreSQL's parser (about 0.2 ms
    per 600 characters, for up to 60 hits); this does the same in Python with
    the same ``english`` (Snowball) stemmer, so "allocation" still marks
    "allocator". A regular expression finds the few words that could stem to
    a lexeme (stemming only changes a word's ending); only those are stemmed.
    It scans the lower-cased text for the (lower-case) prefixes and checks the
    word boundary itself: ``\\b`` and ``IGNORECASE`` made the scan twice as dear.
    """

    def __init__(self, lexemes: frozenset[str]):
        self.lexemes = lexemes
        prefixes = sorted({lexeme[: max(2, len(lexeme) - 2)] for lexeme in lexemes}, key=len, reverse=True)
        pattern = rf"(?:{'|'.join(map(re.escape, prefixes))})\w*"
        self.candidates = re.compile(pattern) if prefixes else None
        self.folded = re.compile(rf"\b{pattern}", re.IGNORECASE) if prefixes else None

    def is_match(self, word: str) -> bool:
        return stem(word) in self.lexemes

    def spans(self, text: str):
        """(start, end) of each word of `text` whose stem is a query lexeme, in order."""
        if not self.candidates:
            return
        lower = text.lower()
        if len(lower) != len(text):  # a few characters lower-case to two: offsets would not carry over
            yield from (match.span() for match in self.folded.finditer(text) if self.is_match(match.group(0)))
            return
        for match in self.candidates.finditer(lower):
            start = match.start()
            if start and (lower[start - 1].isalnum() or lower[start - 1] == "_"):
                continue  # inside a word (``\w`` is ``isalnum()`` or "_")
            if self.is_match(match.group(0)):
                yield match.span()

    def snippet(self, text: str) -> SafeString:
        """About SNIPPET_WORDS words of `text` around the first match (or its start), matches marked."""
        text = text or ""
        first = 0
        offset = next(self.spans(text), (None,))[0]
        if offset is not None:  # the index of the token holding the match
            first = len(text[:offset].split()) - (offset > 0 and not text[offset - 1].isspace())
        tokens = text.split()
        start = max(0, first - SNIPPET_WORDS // 3)
        excerpt = " ".join(tokens[start : start + SNIPPET_WORDS])
        parts, position = ["… " if start else ""], 0
        for begin, end in self.spans(excerpt):
            parts += [html.escape(excerpt[position:begin]), "<mark>", html.escape(excerpt[begin:end]), "</mark>"]
            position = end
        parts += [html.escape(excerpt[position:]), " …" if start + SNIPPET_WORDS < len(tokens) else ""]
        return mark_safe("".join(parts))


@functools.lru_cache(maxsize=64)
def highlighter(querytree: str) -> Highlighter:
    return Highlighter(query_lexemes(querytree))


# SQLite and anything else ---------------------------------------------------------------

def query_words(query: str) -> list[str]:
    return re.findall(r"\w+", query)[:MAX_WORDS]


def _matching(queryset, fields, words: list[str]):
    for word in words:
        condition = models.Q()
        for name in fields:
            condition |= models.Q(**{f"{name}__icontains": word})
        queryset = queryset.filter(condition)
    return queryset[:RESULTS_PER_KIND]


def plain_snippet(text: str, words: list[str]) -> SafeString:
    """About SNIPPET_WORDS words of `text` around the first match, matches marked."""
    tokens = (text or "").split()
    pattern = re.compile("|".join(re.escape(word) for word in words), re.IGNORECASE)
    first = next((index for index, token in enumerate(tokens) if pattern.search(token)), 0)
    start = max(0, first - SNIPPET_WORDS // 3)
    excerpt = " ".join(tokens[start : start + SNIPPET_WORDS])
    marked = pattern.sub(lambda match: f"{START}{match.group(0)}{STOP}", excerpt) if words else excerpt
    prefix = "… " if start else ""
    suffix = " …" if start + SNIPPET_WORDS < len(tokens) else ""
    return mark_sentinels(f"{prefix}{marked}{suffix}")


def _search_fallback(query: str) -> Results:
    words = query_words(query)
    if not words:
        return Results(query=query)
    posts = _matching(Post.objects.published(), POST_FIELDS, words)
    digests = _matching(Digest.objects.published().select_related("topic"), DIGEST_FIELDS, words)
    references = _matching(Reference.objects.published().select_related("repository"), REFERENCE_FIELDS, words)

    def snippet(item) -> SafeString:
        if isinstance(item, Post):
            return plain_snippet(f"{item.excerpt} {item.body}", words)
        if isinstance(item, Digest):
            return plain_snippet(f"{item.summary} {item.body}", words)
        return plain_snippet(f"{item.title} {item.body}", words)

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
