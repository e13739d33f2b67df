"""The disclosure line of a digest (how it was written; the model writer fills it), blank for every existing one."""

from django.db import migrations, models

from publishing.search_migrations import kept_sqlite_triggers

# Adding a NOT NULL column with a default remakes the table on SQLite both ways: its triggers are kept.
SAVE_OR_RESTORE_TRIGGERS, RESTORE_OR_SAVE_TRIGGERS = kept_sqlite_triggers("digests_digest", applying=True)


class Migration(migrations.Migration):

    dependencies = [
        ('digests', '0022_rerender'),
    ]

    operations = [
        SAVE_OR_RESTORE_TRIGGERS,
        migrations.AddField(
            model_name='digest',
            name='disclosure',
            field=models.CharField(blank=True, help_text='Optional line under the byline, in the feed and the API: how it was drafted (the model writer fills it if blank). Plain text.', max_length=300),
        ),
        RESTORE_OR_SAVE_TRIGGERS,
    ]
