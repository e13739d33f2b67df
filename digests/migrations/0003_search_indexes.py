"""Full-text search: GIN indexes on the weighted digest and reference vectors (PostgreSQL only)."""
from django.db import migrations

from publishing.search_migrations import add_search_index

# Frozen copies of reader.search.DIGEST_FIELDS / REFERENCE_FIELDS at the time of this migration.
DIGEST_FIELDS = {"headline": "A", "summary": "B", "body": "C"}
REFERENCE_FIELDS = {"title": "A", "body": "C"}


class Migration(migrations.Migration):
    dependencies = [("digests", "0002_editorial_groups")]

    operations = [
        migrations.RunPython(*add_search_index("digests", "digest", DIGEST_FIELDS)),
        migrations.RunPython(*add_search_index("digests", "reference", REFERENCE_FIELDS)),
    ]
