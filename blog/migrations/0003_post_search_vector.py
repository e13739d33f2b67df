"""Full-text search: a stored weighted search_vector column with a GIN index (PostgreSQL only)."""
from django.db import migrations

from publishing.search_migrations import add_search_column, drop_search_index

# Frozen copy of reader.search.POST_FIELDS at the time of this migration.
POST_FIELDS = {"title": "A", "excerpt": "B", "body": "C"}


class Migration(migrations.Migration):
    dependencies = [("blog", "0002_post_search_index")]

    operations = [
        migrations.RunPython(*drop_search_index("blog", "post", POST_FIELDS)),
        migrations.RunPython(*add_search_column("blog", "post", POST_FIELDS)),
    ]
