"""Unapplying the editorial record on SQLite remakes the content tables; their triggers survive it."""
import pytest
from django.core.management import call_command
from django.db import connection

pytestmark = [
    pytest.mark.skipif(connection.vendor != "sqlite", reason="Django remakes tables only on SQLite"),
    pytest.mark.django_db(transaction=True),
]


def triggers(table: str) -> set[str]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT name FROM sqlite_master WHERE type = 'trigger' AND tbl_name = %s", [table])
        return {row[0] for row in cursor.fetchall()}


def columns(table: str) -> set[str]:
    with connection.cursor() as cursor:
        return {column.name for column in connection.introspection.get_table_description(cursor, table)}


@pytest.mark.parametrize(("app", "before", "table"), [("blog", "0011", "blog_post"),
                                                      ("digests", "0017", "digests_digest")])
def test_unapplying_and_applying_again_keeps_every_trigger(app, before, table):
    kept = triggers(table)
    assert len(kept) >= 3  # the FTS5 index's at least
    assert "created_by_id" in columns(table)
    call_command("migrate", app, before, verbosity=0)
    assert "created_by_id" not in columns(table)  # unapplied: the table was remade without the record
    assert triggers(table) == kept
    call_command("migrate", verbosity=0)
    assert triggers(table) == kept
