"""Full-text search storage: stored, weighted vectors on PostgreSQL, FTS5 indexes on SQLite.

PostgreSQL: a ``search_vector`` column ``GENERATED ALWAYS AS (...) STORED``, so
PostgreSQL keeps it up to date on every insert and update (``bulk_create`` and
``update()`` included) and searches read it instead of re-parsing bodies, with a
GIN index. It is added by vendor-conditional migrations and is not a model
field. The first search migrations used an expression index instead; matches
had to be re-parsed to be checked and ranked (about 0.4-1 s for 400 long posts),
so it is replaced here.

SQLite: an FTS5 table per searched table (``add_sqlite_search``), so words are
stemmed there as PostgreSQL's ``english`` configuration stems them ("allocators"
finds "allocator"), where the first fallback matched substrings (issue 25).
"""
import re

from django.contrib.postgres.indexes import GinIndex

COLUMN = "search_vector"
CONFIG = "english"


def vector_sql(fields: dict[str, str], quote) -> str:
    """The weighted tsvector expression of `fields` ({name: weight}), e.g. title A, body C."""
    return " || ".join(
        f"setweight(to_tsvector('{CONFIG}'::regconfig, coalesce({quote(name)}, '')), '{weight}')"
        for name, weight in fields.items()
    )


def add_search_column(app_label: str, model_name: str, fields: dict[str, str]):
    """A (forwards, backwards) pair for ``RunPython``: the stored column and its GIN index, PostgreSQL only."""

    def forwards(apps, schema_editor):
        if schema_editor.connection.vendor != "postgresql":
            return
        table = apps.get_model(app_label, model_name)._meta.db_table
        quote = schema_editor.quote_name
        schema_editor.execute(
            f"ALTER TABLE {quote(table)} ADD COLUMN {COLUMN} tsvector "
            f"GENERATED ALWAYS AS ({vector_sql(fields, quote)}) STORED"
        )
        schema_editor.execute(f"CREATE INDEX {quote(f'{table}_{COLUMN}_gin')} ON {quote(table)} USING GIN ({COLUMN})")

    def backwards(apps, schema_editor):
        if schema_editor.connection.vendor != "postgresql":
            return
        table = apps.get_model(app_label, model_name)._meta.db_table
        schema_editor.execute(f"ALTER TABLE {schema_editor.quote_name(table)} DROP COLUMN {COLUMN}")

    return forwards, backwards


def add_search_index(app_label: str, model_name: str, fields: dict):
    """The first migrations' GIN expression index (kept so those migrations still run; dropped later)."""
    from django.contrib.postgres.search import SearchVector

    def index():
        vectors = [SearchVector(name, weight=weight, config=CONFIG) for name, weight in fields.items()]
        combined = vectors[0]
        for vector in vectors[1:]:
            combined = combined + vector
        return GinIndex(combined, name=f"{model_name}_search_gin")

    def forwards(apps, schema_editor):
        if schema_editor.connection.vendor == "postgresql":
            schema_editor.add_index(apps.get_model(app_label, model_name), index())

    def backwards(apps, schema_editor):
        if schema_editor.connection.vendor == "postgresql":
            schema_editor.remove_index(apps.get_model(app_label, model_name), index())

    return forwards, backwards


def drop_search_index(app_label: str, model_name: str, fields: dict):
    """The reverse of ``add_search_index``, as a (forwards, backwards) pair."""
    add, remove = add_search_index(app_label, model_name, fields)
    return remove, add


#: Keeps ``digests_searchcitation`` (``digests.models.SearchCitation``) a copy of every citation with
#: its digest's status, date and publication time and its reference's stored vector (row triggers;
#: a TRUNCATE of the citations, which fires no row trigger, empties it too).
CITATION_SEARCH_SQL = f"""
ALTER TABLE digests_searchcitation ADD COLUMN {COLUMN} tsvector NOT NULL;

CREATE FUNCTION digests_searchcitation_from_citation() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP <> 'INSERT' THEN
        DELETE FROM digests_searchcitation WHERE citation_id = OLD.id;
    END IF;
    IF TG_OP <> 'DELETE' THEN
        INSERT INTO digests_searchcitation
            (citation_id, digest_id, reference_id, status, date, published_at, {COLUMN})
        SELECT NEW.id, d.id, r.id, d.status, d.date, d.published_at, r.{COLUMN}
        FROM digests_digest d, digests_reference r
        WHERE d.id = NEW.digest_id AND r.id = NEW.reference_id
        FOR SHARE;  -- a concurrent change to either row waits, or is waited for and read
    END IF;
    RETURN NULL;
END $$;
CREATE TRIGGER searchcitation_citation AFTER INSERT OR UPDATE OR DELETE ON digests_digestreference
    FOR EACH ROW EXECUTE FUNCTION digests_searchcitation_from_citation();

CREATE FUNCTION digests_searchcitation_truncate() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM digests_searchcitation;  -- not TRUNCATE: it may be in the same TRUNCATE statement (flush)
    RETURN NULL;
END $$;
CREATE TRIGGER searchcitation_truncate AFTER TRUNCATE ON digests_digestreference
    FOR EACH STATEMENT EXECUTE FUNCTION digests_searchcitation_truncate();

CREATE FUNCTION digests_searchcitation_from_digest() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE digests_searchcitation SET status = NEW.status, date = NEW.date, published_at = NEW.published_at
    WHERE digest_id = NEW.id;
    RETURN NULL;
END $$;
CREATE TRIGGER searchcitation_digest AFTER UPDATE ON digests_digest FOR EACH ROW
    WHEN (OLD.status IS DISTINCT FROM NEW.status OR OLD.date IS DISTINCT FROM NEW.date
          OR OLD.published_at IS DISTINCT FROM NEW.published_at)
    EXECUTE FUNCTION digests_searchcitation_from_digest();

CREATE FUNCTION digests_searchcitation_from_reference() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE digests_searchcitation SET {COLUMN} = NEW.{COLUMN} WHERE reference_id = NEW.id;
    RETURN NULL;
END $$;
CREATE TRIGGER searchcitation_reference AFTER UPDATE ON digests_reference FOR EACH ROW
    WHEN (OLD.{COLUMN} IS DISTINCT FROM NEW.{COLUMN})
    EXECUTE FUNCTION digests_searchcitation_from_reference();

CREATE INDEX digests_searchcitation_digest ON digests_searchcitation (digest_id);
CREATE INDEX digests_searchcitation_reference ON digests_searchcitation (reference_id);

INSERT INTO digests_searchcitation (citation_id, digest_id, reference_id, status, date, published_at, {COLUMN})
SELECT c.id, d.id, r.id, d.status, d.date, d.published_at, r.{COLUMN}
FROM digests_digestreference c
JOIN digests_digest d ON d.id = c.digest_id
JOIN digests_reference r ON r.id = c.reference_id;
"""

CITATION_SEARCH_REVERSE_SQL = f"""
DROP TRIGGER searchcitation_citation ON digests_digestreference;
DROP TRIGGER searchcitation_truncate ON digests_digestreference;
DROP TRIGGER searchcitation_digest ON digests_digest;
DROP TRIGGER searchcitation_reference ON digests_reference;
DROP FUNCTION digests_searchcitation_from_citation();
DROP FUNCTION digests_searchcitation_truncate();
DROP FUNCTION digests_searchcitation_from_digest();
DROP FUNCTION digests_searchcitation_from_reference();
DROP INDEX digests_searchcitation_digest;
DROP INDEX digests_searchcitation_reference;
ALTER TABLE digests_searchcitation DROP COLUMN {COLUMN};
"""


def add_citation_search():
    """A (forwards, backwards) pair for ``RunPython``: the vector column and the triggers, PostgreSQL only."""

    def forwards(apps, schema_editor):
        if schema_editor.connection.vendor == "postgresql":
            schema_editor.execute(CITATION_SEARCH_SQL)

    def backwards(apps, schema_editor):
        if schema_editor.connection.vendor == "postgresql":
            schema_editor.execute(CITATION_SEARCH_REVERSE_SQL)

    return forwards, backwards


def keep_vector_inline(app_label: str, model_name: str):
    """A (forwards, backwards) pair for ``RunPython``: store the vector in the row itself, PostgreSQL only.

    A search checks the vector of every row it walks. With the default
    (EXTENDED) storage PostgreSQL moves the vectors of wide rows (a post's
    body, rendering and cards) out to the TOAST table, so each check was an
    index probe there and a second read, 5-10 µs. MAIN keeps the vector in
    the row and moves the other long columns out first; a vector is moved
    out only when the row could not fit a page otherwise. Rows written before
    the change keep their layout until rewritten (any update, or
    ``VACUUM FULL``).
    """

    def alter(storage: str):
        def run(apps, schema_editor):
            if schema_editor.connection.vendor != "postgresql":
                return
            table = schema_editor.quote_name(apps.get_model(app_label, model_name)._meta.db_table)
            schema_editor.execute(f"ALTER TABLE {table} ALTER COLUMN {COLUMN} SET STORAGE {storage}")

        return run

    return alter("MAIN"), alter("EXTENDED")


CITATION_GIN = "digests_searchcitation_search_vector_gin"


def add_citation_search_index():
    """A (forwards, backwards) pair for ``RunPython``: a GIN index on the citations' vectors, PostgreSQL only.

    Without it a query that few citations match (a rare word, a phrase, a typo) had no choice but to
    walk every citation newest first: ~20-35 ms per search on the benchmark archive, whatever the
    posts and digests cost. With it PostgreSQL takes those few matches from the index, as it does
    for posts and digests, and still walks newest first when matches are common.
    """

    def forwards(apps, schema_editor):
        if schema_editor.connection.vendor == "postgresql":
            schema_editor.execute(f"CREATE INDEX {CITATION_GIN} ON digests_searchcitation USING GIN ({COLUMN})")

    def backwards(apps, schema_editor):
        if schema_editor.connection.vendor == "postgresql":
            schema_editor.execute(f"DROP INDEX {CITATION_GIN}")

    return forwards, backwards


#: SQLite's FTS5 tokenizer: ``unicode61``'s words, case-folded, then the Porter stemmer (the
#: algorithm PostgreSQL's ``english`` Snowball stemmer refines: the same stem for ordinary
#: English words). Diacritics are kept ("café" is not "cafe"), as the ``english`` configuration keeps them.
FTS_TOKENIZER = "porter unicode61 remove_diacritics 0"


def fts_table(table: str) -> str:
    """The FTS5 index of `table` on SQLite (its shadow tables are ``<name>_data`` and so on)."""
    return f"{table}_fts"


def sqlite_search_sql(table: str, fields: tuple[str, ...]) -> list[str]:
    """The statements that create and fill `table`'s FTS5 index of `fields`, and keep it with triggers.

    An external-content table: FTS5 stores only the index and reads the text from
    `table` by ``rowid`` (the ``id``). Triggers keep it on every insert, delete and
    change of a searched column, whoever writes (``save()``, ``bulk_create``,
    ``update()``, raw SQL); a change of status alone reindexes nothing. ``rebuild``
    indexes the rows already there. A migration that remakes `table` on SQLite
    (Django copies it to a new table) drops its triggers: it must run these again.
    """
    fts, columns = fts_table(table), ", ".join(fields)
    old = ", ".join(f"old.{name}" for name in fields)
    new = ", ".join(f"new.{name}" for name in fields)
    delete = f"INSERT INTO {fts}({fts}, rowid, {columns}) VALUES ('delete', old.id, {old});"
    insert = f"INSERT INTO {fts}(rowid, {columns}) VALUES (new.id, {new});"
    return [
        f"CREATE VIRTUAL TABLE {fts} USING fts5({columns}, content='{table}', content_rowid='id', "
        f"tokenize='{FTS_TOKENIZER}')",
        f"CREATE TRIGGER {fts}_insert AFTER INSERT ON {table} BEGIN {insert} END",
        f"CREATE TRIGGER {fts}_delete AFTER DELETE ON {table} BEGIN {delete} END",
        f"CREATE TRIGGER {fts}_update AFTER UPDATE OF {columns} ON {table} BEGIN {delete} {insert} END",
        f"INSERT INTO {fts}({fts}) VALUES ('rebuild')",
    ]


def add_sqlite_search(app_label: str, model_name: str, fields: tuple[str, ...]):
    """A (forwards, backwards) pair for ``RunPython``: the FTS5 index of `fields`, SQLite only."""

    def forwards(apps, schema_editor):
        if schema_editor.connection.vendor == "sqlite":
            for statement in sqlite_search_sql(apps.get_model(app_label, model_name)._meta.db_table, fields):
                schema_editor.execute(statement)

    def backwards(apps, schema_editor):
        if schema_editor.connection.vendor == "sqlite":
            fts = fts_table(apps.get_model(app_label, model_name)._meta.db_table)
            for trigger in ("insert", "delete", "update"):
                schema_editor.execute(f"DROP TRIGGER {fts}_{trigger}")
            schema_editor.execute(f"DROP TABLE {fts}")

    return forwards, backwards


def kept_sqlite_triggers(table: str, *, applying: bool = False):
    """Two ``RunPython`` operations to put first and last in a migration whose *reversal* remakes `table` on SQLite.

    Removing a foreign key column makes Django copy the table to a new one and rename it,
    which drops every trigger on the table (the FTS5 index's; on digests those keeping
    ``first_published_at`` and ``DigestRepository``, migrations 0014 and 0015) and fails
    while a trigger on another table names it (SQLite checks them at the rename).
    Unapplying, the last operation's reverse runs first: it notes and drops every trigger
    on or naming `table`; the first operation's reverse runs last and creates them again.
    The rows keep their ids, so the FTS5 index still matches them. Applying, both do nothing, unless
    `applying`: for a migration that remakes the table on the way forward too (adding a NOT NULL
    column with a default does), the first operation then saves and drops them, the last restores them.
    """
    saved: list[tuple[str, str]] = []
    named = re.compile(rf"\b{re.escape(table)}\b")

    def save(apps, schema_editor):
        if schema_editor.connection.vendor == "sqlite":
            with schema_editor.connection.cursor() as cursor:
                cursor.execute("SELECT name, tbl_name, sql FROM sqlite_master WHERE type = 'trigger'")
                saved[:] = [(name, sql) for name, on, sql in cursor.fetchall() if on == table or named.search(sql)]
            for name, _sql in saved:
                schema_editor.execute(f"DROP TRIGGER {name}")

    def restore(apps, schema_editor):
        if schema_editor.connection.vendor == "sqlite":
            for _name, sql in saved:
                schema_editor.execute(sql)

    from django.db.migrations import RunPython

    if applying:
        return RunPython(save, restore), RunPython(restore, save)
    return RunPython(RunPython.noop, restore), RunPython(RunPython.noop, save)
