"""Keep search vectors in the row (PostgreSQL storage MAIN): the search checks one per row it walks."""
from django.db import migrations

from publishing.search_migrations import keep_vector_inline


class Migration(migrations.Migration):
    dependencies = [("digests", "0007_search_citations")]

    operations = [
        migrations.RunPython(*keep_vector_inline("digests", "digest")),
        migrations.RunPython(*keep_vector_inline("digests", "reference")),
        migrations.RunPython(*keep_vector_inline("digests", "searchcitation")),
    ]
