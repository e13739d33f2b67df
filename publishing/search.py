"""How a reader's query is read and matched: shared by the site search (``reader/search.py``) and the
API's ``q`` (``blog/api.py``), so both find the same things with the same operators.

On PostgreSQL a query is ``websearch_to_tsquery`` syntax ("quoted phrases", -exclusions, ``or``)
matched against each row's stored, weighted ``search_vector`` (see ``search_migrations``) and
ranked by ``ts_rank``. On SQLite every word of the query but the ``english`` configuration's
stop words must be in the row's FTS5 index, where words are stemmed as that configuration
stems them ("allocators" finds "allocator"); operators are PostgreSQL's alone. These live
here, beneath the content apps, because the API of a content app may not import ``reader``.
"""
import re

from django.db import connections, models
from django.db.models.expressions import RawSQL

from .search_migrations import CONFIG, fts_table

MAX_QUERY_LENGTH = 200
MAX_WORDS = 8
CONTROL_CHARACTERS = re.compile(r"[\x00-\x1f\x7f]")

#: The reader's query as PostgreSQL's ``websearch_to_tsquery`` in the configuration the vectors use.
TSQUERY_SQL = f"websearch_to_tsquery('{CONFIG}'::regconfig, %(query)s::text)"


def clean_query(raw: str | None) -> str:
    """Whitespace collapsed, control characters (NUL breaks PostgreSQL) dropped, length capped."""
    return " ".join(CONTROL_CHARACTERS.sub(" ", raw or "").split())[:MAX_QUERY_LENGTH]


#: The stop words of PostgreSQL's ``english`` configuration (its ``tsearch_data/english.stop``,
#: Snowball's English list), which it leaves out of a query and of the vectors; SQLite leaves
#: them out of a query too, so "allocator for memory" finds what it finds on PostgreSQL.
ENGLISH_STOP_WORDS = frozenset("""
i me my myself we our ours ourselves you your yours yourself yourselves he him his himself she her
hers herself it its itself they them their theirs themselves what which who whom this that these
those am is are was were be been being have has had having do does did doing a an the and but if or
because as until while of at by for with about against between into through during before after
above below to from up down in out on off over under again further then once here there when where
why how all any both each few more most other some such no nor not only own same so than too very s
t can will just don should now
""".split())


def query_words(query: str) -> list[str]:
    """The words SQLite matches: stop words left out, as PostgreSQL leaves them (operators are its alone)."""
    return [word for word in re.findall(r"\w+", query) if word.lower() not in ENGLISH_STOP_WORDS][:MAX_WORDS]


def fts5_query(words: list[str]) -> str:
    """An FTS5 ``MATCH`` expression that every one of `words` must match, whatever the reader typed.

    Each word is an FTS5 string (double quotes, a quote inside written twice): FTS5 reads
    nothing in a string as syntax (``AND``, ``NEAR``, ``*``, ``^``, ``:``, brackets), only
    tokenizes and stems it, so no query can be an FTS5 syntax error. Strings side by side
    are FTS5's implicit AND.
    """
    return " ".join('"' + word.replace('"', '""') + '"' for word in words)


def fts_match(queryset, words: list[str]):
    """Rows of `queryset` whose FTS5 index (SQLite, ``search_migrations.add_sqlite_search``) holds every word."""
    if not words:
        return queryset.none()
    quote = connections[queryset.db].ops.quote_name
    meta = queryset.model._meta
    fts = quote(fts_table(meta.db_table))
    return queryset.filter(RawSQL(
        f"{quote(meta.db_table)}.{quote(meta.pk.column)} IN (SELECT rowid FROM {fts} WHERE {fts} MATCH %s)",
        (fts5_query(words),), models.BooleanField(),
    ))


def full_text(queryset, raw_query: str, *, rank: str = "search_rank"):
    """Rows of `queryset` matching the reader's query, as the site search matches them.

    On PostgreSQL the rows are annotated with `rank` (``ts_rank`` of the stored vector, as the
    site ranks its hits); on SQLite with a constant 0 (every word must be in the FTS5 index).
    Returns ``(queryset, ranked)``: ``ranked`` says whether `rank` orders anything.
    """
    query = clean_query(raw_query)
    if connections[queryset.db].vendor != "postgresql":
        matched = fts_match(queryset, query_words(query))
        return matched.annotate(**{rank: models.Value(0.0, models.FloatField())}), False
    table = connections[queryset.db].ops.quote_name(queryset.model._meta.db_table)
    tsquery = TSQUERY_SQL.replace("%(query)s", "%s")
    return (
        queryset.annotate(**{rank: RawSQL(f"ts_rank({table}.search_vector, {tsquery})", (query,), models.FloatField())})
        .filter(RawSQL(f"{table}.search_vector @@ {tsquery}", (query,), models.BooleanField())),
        True,
    )
