"""Site search over published posts, digests and references.

On PostgreSQL: a weighted full-text search (title A, summary/excerpt B, body C),
``websearch_to_tsquery`` syntax ("quoted phrases", -exclusions, or), ranked,
with ``ts_headline`` snippets; the weighted vectors are stored, generated
columns with GIN indexes (see search_migrations). On SQLite: every word must appear somewhere, newest first,
with a plain snippet around the first match.

Snippets are built from raw source text, much of it written by strangers, so
they are escaped first and only our own ``<mark>`` elements are added after.
"""
import re
from dataclasses import dataclass, field

from django.contrib.postgres.search import SearchHeadline, SearchQuery, SearchRank, SearchVectorField
from django.db import connection, models
from django.db.models.expressions import RawSQL
from django.db.models.functions import Concat
from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

from blog.models import Post
from digests.models import Digest, Reference

from .search_migrations import COLUMN, CONFIG

MAX_QUERY_LENGTH = 200
MAX_WORDS = 8
RESULTS_PER_KIND = 20
SNIPPET_WORDS = 30
# Control characters no reader types, so they can mark matches through escaping.
START, STOP = "\x02", "\x03"


def stored_vector(model) -> RawSQL:
    """The model's stored ``search_vector`` column (PostgreSQL only; see search_migrations)."""
    table = connection.ops.quote_name(model._meta.db_table)
    return RawSQL(f"{table}.{COLUMN}", [], output_field=SearchVectorField())


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


@dataclass
class Results:
    query: str
    posts: list[Hit] = field(default_factory=list)
    digests: list[Hit] = field(default_factory=list)
    references: list[Hit] = field(default_factory=list)

    @property
    def count(self) -> int:
        return len(self.posts) + len(self.digests) + len(self.references)


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

def _ranked(queryset, query: SearchQuery, headline_source):
    return (
        queryset.annotate(document=stored_vector(queryset.model))
        .filter(document=query)
        .annotate(
            rank=SearchRank(models.F("document"), query),
            snippet=SearchHeadline(
                headline_source, query, config=CONFIG, start_sel=START, stop_sel=STOP,
                max_words=SNIPPET_WORDS, min_words=12, short_word=2, max_fragments=2, fragment_delimiter=" … ",
            ),
        )
        .order_by("-rank", "-id")[:RESULTS_PER_KIND]
    )


def _joined(*names: str) -> Concat:
    """The fields' text joined by spaces: what a snippet is cut from."""
    parts = []
    for name in names:
        parts += [name, models.Value(" ")]
    return Concat(*parts[:-1], output_field=models.TextField())


def _search_postgres(query: str) -> Results:
    tsquery = SearchQuery(query, search_type="websearch", config=CONFIG)
    posts = _ranked(Post.objects.published(), tsquery, _joined("excerpt", "body"))
    digests = _ranked(
        Digest.objects.published().select_related("topic"), tsquery,
        _joined("summary", "body"),
    )
    references = _ranked(
        Reference.objects.published().select_related("repository"), tsquery,
        _joined("title", "body"),
    )
    return _results(query, posts, digests, references, lambda item: mark_sentinels(item.snippet))


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
