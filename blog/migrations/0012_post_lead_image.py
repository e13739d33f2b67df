"""A post's lead image (issue 26). Adding a foreign key makes Django remake blog_post on SQLite, which
drops the FTS5 index's triggers (0011): they are made again, and the index refilled, right after -- and
again when the migration is reversed (removing the column remakes the table too; 0011's reverse drops them)."""
import django.db.models.deletion
from django.db import migrations, models

from publishing.search_migrations import renew_sqlite_search

# Frozen copy of the keys of blog.models.SEARCH_FIELDS at the time of this migration.
POST_FIELDS = ("title", "excerpt", "body")


class Migration(migrations.Migration):

    dependencies = [
        ('blog', '0011_post_search_fts'),
        ('images', '0001_initial'),
    ]

    operations = [
        migrations.RunPython(migrations.RunPython.noop, renew_sqlite_search("blog", "post", POST_FIELDS)),
        migrations.AddField(
            model_name='post',
            name='lead_html',
            field=models.TextField(blank=True, editable=False, help_text="The lead image's <figure>, rendered on save."),
        ),
        migrations.AddField(
            model_name='post',
            name='lead_image',
            field=models.ForeignKey(blank=True, help_text="Shown above the body, in feeds, and on the post's social card (og:image).", null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to='images.image'),
        ),
        migrations.RunPython(renew_sqlite_search("blog", "post", POST_FIELDS), migrations.RunPython.noop),
    ]
