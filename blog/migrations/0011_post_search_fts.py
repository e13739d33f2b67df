"""Search on SQLite: an FTS5 index of posts that stems words (Porter), kept by triggers (issue 25).

A no-op on PostgreSQL, whose stored ``search_vector`` (0003) already stems. On an
existing SQLite database the index is filled from the posts already there.
"""
from django.db import migrations

from publishing.search_migrations import add_sqlite_search

# Frozen copy of the keys of blog.models.SEARCH_FIELDS at the time of this migration.
POST_FIELDS = ("title", "excerpt", "body")


class Migration(migrations.Migration):
    dependencies = [("blog", "0010_readeredges_social_card")]

    operations = [migrations.RunPython(*add_sqlite_search("blog", "post", POST_FIELDS))]
