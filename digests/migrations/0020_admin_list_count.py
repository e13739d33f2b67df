"""The admin's list count in one statement on PostgreSQL: the planner's estimate, or the exact count below a size.

A frozen copy of ``publishing.changelists.COUNT_FUNCTION_BODY`` (tests/test_admin_at_scale.py
compares the installed function with it). Nothing to do on SQLite, where lists count exactly.
"""
from django.db import migrations

NAME = "admin_list_count"
SIGNATURE = f"{NAME}(query text, whole_table text, exact_below bigint, OUT total bigint, OUT estimated boolean)"
BODY = """
DECLARE
    plan json;
BEGIN
    IF whole_table IS NOT NULL THEN
        SELECT reltuples::bigint INTO total FROM pg_class WHERE oid = whole_table::regclass;
    END IF;
    IF total IS NULL OR total < 0 THEN  -- a filtered list, or a table never analysed
        EXECUTE 'EXPLAIN (FORMAT JSON) ' || query INTO plan;
        total := (plan -> 0 -> 'Plan' ->> 'Plan Rows')::bigint;
    END IF;
    estimated := total >= exact_below;
    IF NOT estimated THEN
        EXECUTE 'SELECT count(*) FROM (' || query || ') AS counted' INTO total;
    END IF;
END
"""


def install(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(f"CREATE OR REPLACE FUNCTION {SIGNATURE} LANGUAGE plpgsql VOLATILE AS $body${BODY}$body$")


def remove(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(f"DROP FUNCTION IF EXISTS {NAME}(text, text, bigint)")


class Migration(migrations.Migration):

    dependencies = [("digests", "0019_admin_at_scale")]

    operations = [migrations.RunPython(install, remove, elidable=False)]
