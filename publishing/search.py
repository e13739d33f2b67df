"""How a reader's query is read and matched: shared by the site search (``reader/search.py``) and the
API's ``q`` (``blog/api.py``), so both find the same things with the same operators.

On PostgreSQL a query is ``websearch_to_tsquery`` syntax ("quoted phrases", -exclusions, ``or``)
matched against each row's stored, weighted ``search_vector`` (see ``search_migrations``) and
ranked by ``ts_rank``. Elsewhere (SQLite) every word of the query must appear in one of the
searched fields. These live here, beneath the content apps, because the API of a content app may
not import ``reader``.
"""
import re

from django.db import connections, models
from django.db.models.expressions import RawSQL

from .search_migrations import CONFIG

MAX_QUERY_LENGTH = 200
MAX_WORDS = 8
CONTROL_CHARACTERS = re.compile(r"[\x00-\x1f\x7f]")

#: The reader's query as PostgreSQL's ``websearch_to_tsquery`` in the configuration the vectors use.
TSQUERY_SQL = f"websearch_to_tsquery('{CONFIG}'::regconfig, %(query)s::text)"


def clean_query(raw: str | None) -> str:
    """Whitespace collapsed, control characters (NUL breaks PostgreSQL, sentinels) dropped, length capped."""
    return " ".join(CONTROL_CHARACTERS.sub(" ", raw or "").split())[:MAX_QUERY_LENGTH]


def query_words(query: str) -> list[str]:
    """The words the fallback matches (operators are PostgreSQL's alone)."""
    return re.findall(r"\w+", query)[:MAX_WORDS]


def with_every_word(queryset, fields, words: list[str]):
    """The fallback's match: rows where each word appears (any case) in at least one of `fields`."""
    for word in words:
        condition = models.Q()
        for name in fields:
            condition |= models.Q(**{f"{name}__icontains": word})
        queryset = queryset.filter(condition)
    return queryset


def full_text(queryset, fields, raw_query: str, *, rank: str = "search_rank"):
    """Rows of `queryset` matching the reader's query, as the site search matches them.

    On PostgreSQL the rows are annotated with `rank` (``ts_rank`` of the stored vector, as the
    site ranks its hits); elsewhere with a constant 0 (every word must appear in `fields`).
    Returns ``(queryset, ranked)``: ``ranked`` says whether `rank` orders anything.
    """
    query = clean_query(raw_query)
    if connections[queryset.db].vendor != "postgresql":
        words = query_words(query)
        matched = with_every_word(queryset, fields, words) if words else queryset.none()
        return matched.annotate(**{rank: models.Value(0.0, models.FloatField())}), False
    table = connections[queryset.db].ops.quote_name(queryset.model._meta.db_table)
    tsquery = TSQUERY_SQL.replace("%(query)s", "%s")
    return (
        queryset.annotate(**{rank: RawSQL(f"ts_rank({table}.search_vector, {tsquery})", (query,), models.FloatField())})
        .filter(RawSQL(f"{table}.search_vector @@ {tsquery}", (query,), models.BooleanField())),
        True,
    )
