"""Full-text search storage on PostgreSQL: a stored, weighted ``search_vector`` column with a GIN index.

The column is ``GENERATED ALWAYS AS (...) STORED``, so PostgreSQL keeps it up
to date on every insert and update (``bulk_create`` and ``update()`` included)
and searches read it instead of re-parsing bodies. It is added by
vendor-conditional migrations and is not a model field: SQLite, where the
fallback search needs no index, never sees it, and the migrations are no-ops
there. The first search migrations used an expression index instead; matches
had to be re-parsed to be checked and ranked (about 0.4-1 s for 400 long posts),
so it is replaced here.
"""
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
