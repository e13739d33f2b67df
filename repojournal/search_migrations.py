"""GIN expression indexes for full-text search, created only on PostgreSQL.

The migrations of digests and blog call these. The index expression is built
from the same ``weighted_vector`` the search queries use, so PostgreSQL matches
``document @@ query`` against the index. SQLite (the fallback search) gets no
index and the migrations are no-ops there, so they apply on both databases.
"""
from django.contrib.postgres.indexes import GinIndex


def _index(model_name: str, fields: dict) -> GinIndex:
    from repojournal.search import weighted_vector

    return GinIndex(weighted_vector(**fields), name=f"{model_name}_search_gin")


def add_search_index(app_label: str, model_name: str, fields: dict):
    """A (forwards, backwards) pair for ``RunPython`` that adds/drops the index on PostgreSQL."""

    def forwards(apps, schema_editor):
        if schema_editor.connection.vendor == "postgresql":
            schema_editor.add_index(apps.get_model(app_label, model_name), _index(model_name, fields))

    def backwards(apps, schema_editor):
        if schema_editor.connection.vendor == "postgresql":
            schema_editor.remove_index(apps.get_model(app_label, model_name), _index(model_name, fields))

    return forwards, backwards
