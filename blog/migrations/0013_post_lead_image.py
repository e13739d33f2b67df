"""A post's lead image (issue 26). Adding ``lead_html`` (NOT NULL, default "") makes Django remake
blog_post on SQLite, both ways: the triggers on it (the FTS5 index's, 0011) are kept across it."""
import django.db.models.deletion
from django.db import migrations, models

from publishing.search_migrations import kept_sqlite_triggers

SAVE_OR_RESTORE_TRIGGERS, RESTORE_OR_SAVE_TRIGGERS = kept_sqlite_triggers("blog_post", applying=True)


class Migration(migrations.Migration):

    dependencies = [
        ('blog', '0012_editorial_record'),
        ('images', '0001_initial'),
    ]

    operations = [
        SAVE_OR_RESTORE_TRIGGERS,
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
        RESTORE_OR_SAVE_TRIGGERS,
    ]
