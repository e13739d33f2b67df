"""A GIN index on the search citations' vectors (PostgreSQL only): rare queries need not walk them all."""
from django.db import migrations

from publishing.search_migrations import add_citation_search_index


class Migration(migrations.Migration):
    dependencies = [("digests", "0008_search_vectors_inline")]

    operations = [migrations.RunPython(*add_citation_search_index())]
