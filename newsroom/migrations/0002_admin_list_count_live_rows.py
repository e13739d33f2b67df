"""The admin's whole-table count follows a mass delete: the statistics' live rows, not ``pg_class.reltuples``.

A frozen copy of ``publishing.changelists.COUNT_FUNCTION_BODY`` (tests/test_admin_at_scale.py
compares the installed function with it), replacing the one digests 0020 installed; unapplying
puts that one back. Here because the count belongs to the admin site (newsroom), not to one
app's lists. Nothing to do on SQLite, where lists count exactly.
"""
from importlib import import_module

from django.db import migrations

NAME = "admin_list_count"
SIGNATURE = f"{NAME}(query text, whole_table text, exact_below bigint, OUT total bigint, OUT estimated boolean)"
BODY = """
DECLARE
    plan json;
BEGIN
    IF whole_table IS NOT NULL THEN
        SELECT CASE
                   -- the statistics system's live rows, once a VACUUM or ANALYZE since its last reset set them
                   WHEN NOT pg_is_in_recovery() AND COALESCE(
                            pg_stat_get_last_vacuum_time(c.oid), pg_stat_get_last_autovacuum_time(c.oid),
                            pg_stat_get_last_analyze_time(c.oid), pg_stat_get_last_autoanalyze_time(c.oid)
                        ) IS NOT NULL
                       THEN pg_stat_get_live_tuples(c.oid)
                   -- else as the planner estimates: the rows per page at the last ANALYZE times today's pages
                   WHEN c.reltuples >= 0 AND c.relpages > 0
                       THEN round(c.reltuples / c.relpages
                                  * (pg_relation_size(c.oid) / current_setting('block_size')::bigint))::bigint
               END
          INTO total FROM pg_class c WHERE c.oid = whole_table::regclass;
    END IF;
    IF total IS NULL THEN  -- a filtered list, or a table never analysed
        EXECUTE 'EXPLAIN (FORMAT JSON) ' || query INTO plan;
        total := (plan -> 0 -> 'Plan' ->> 'Plan Rows')::bigint;
    END IF;
    estimated := total >= exact_below;
    IF NOT estimated THEN
        EXECUTE 'SELECT count(*) FROM (' || query || ') AS counted' INTO total;
    END IF;
END
"""


def _create(schema_editor, body: str) -> None:
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(f"CREATE OR REPLACE FUNCTION {SIGNATURE} LANGUAGE plpgsql VOLATILE AS $body${body}$body$")


def install(apps, schema_editor):
    _create(schema_editor, BODY)


def restore(apps, schema_editor):
    _create(schema_editor, import_module("digests.migrations.0020_admin_list_count").BODY)


class Migration(migrations.Migration):

    dependencies = [("newsroom", "0001_prune_record"), ("digests", "0020_admin_list_count")]

    operations = [migrations.RunPython(install, restore, elidable=False)]
