"""Keep posts' search vectors in the row (PostgreSQL storage MAIN): the search checks one per row it walks."""
from django.db import migrations

from publishing.search_migrations import keep_vector_inline


class Migration(migrations.Migration):
    dependencies = [("blog", "0007_post_authors_tags")]

    operations = [migrations.RunPython(*keep_vector_inline("blog", "post"))]
