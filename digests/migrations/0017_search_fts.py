"""Search on SQLite: FTS5 indexes of digests and references that stem words (Porter), kept by triggers (issue 25).

No-ops on PostgreSQL, whose stored ``search_vector`` columns (0004) already stem.
On an existing SQLite database the indexes are filled from the rows already there.
"""
from django.db import migrations

from publishing.search_migrations import add_sqlite_search

# Frozen copies of the keys of reader.search.DIGEST_FIELDS / REFERENCE_FIELDS at the time of this migration.
DIGEST_FIELDS = ("headline", "summary", "body")
REFERENCE_FIELDS = ("title", "body")


class Migration(migrations.Migration):
    dependencies = [("digests", "0016_merge_tally")]

    operations = [
        migrations.RunPython(*add_sqlite_search("digests", "digest", DIGEST_FIELDS)),
        migrations.RunPython(*add_sqlite_search("digests", "reference", REFERENCE_FIELDS)),
    ]
