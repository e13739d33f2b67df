"""Full-text search: a GIN index on the weighted post vector (PostgreSQL only; a no-op on SQLite)."""
from django.db import migrations

from publishing.search_migrations import add_search_index

# Frozen copy of reader.search.POST_FIELDS at the time of this migration.
POST_FIELDS = {"title": "A", "excerpt": "B", "body": "C"}


class Migration(migrations.Migration):
    dependencies = [("blog", "0001_initial")]

    operations = [migrations.RunPython(*add_search_index("blog", "post", POST_FIELDS))]
