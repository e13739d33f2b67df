"""Full-text search: stored weighted search_vector columns with GIN indexes (PostgreSQL only)."""
from django.db import migrations

from publishing.search_migrations import add_search_column, drop_search_index

# Frozen copies of reader.search.DIGEST_FIELDS / REFERENCE_FIELDS at the time of this migration.
DIGEST_FIELDS = {"headline": "A", "summary": "B", "body": "C"}
REFERENCE_FIELDS = {"title": "A", "body": "C"}


class Migration(migrations.Migration):
    dependencies = [("digests", "0003_search_indexes")]

    operations = [
        migrations.RunPython(*drop_search_index("digests", "digest", DIGEST_FIELDS)),
        migrations.RunPython(*drop_search_index("digests", "reference", REFERENCE_FIELDS)),
        migrations.RunPython(*add_search_column("digests", "digest", DIGEST_FIELDS)),
        migrations.RunPython(*add_search_column("digests", "reference", REFERENCE_FIELDS)),
    ]
