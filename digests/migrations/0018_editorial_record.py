"""The editorial record on each digest (who created, last edited and moved it: the newsroom reads it),
filled from the revision history for what that history proves (publishing/editorial_records.py)."""

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models

from publishing.editorial_records import backfill
from publishing.search_migrations import kept_sqlite_triggers

# Unapplying removes foreign keys, which makes Django remake the table on SQLite: its triggers are kept.
RESTORE_TRIGGERS, SAVE_TRIGGERS = kept_sqlite_triggers("digests_digest")


def from_revisions(apps, schema_editor):
    backfill(apps, "digests", "digest")


class Migration(migrations.Migration):

    dependencies = [
        ('digests', '0017_search_fts'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
        ('reversion', '0002_add_index_on_version_for_content_type_and_db'),
        ('contenttypes', '0002_remove_content_type_name'),
    ]

    operations = [
        RESTORE_TRIGGERS,
        migrations.AddField(
            model_name='digest',
            name='created_by',
            field=models.ForeignKey(blank=True, db_index=False, editable=False, help_text='Who created it in the admin or over the API (empty: ingestion, an import, or not recorded).', null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to=settings.AUTH_USER_MODEL),
        ),
        migrations.AddField(
            model_name='digest',
            name='edited_by',
            field=models.ForeignKey(blank=True, db_index=False, editable=False, help_text='Who last changed its content in the admin or over the API (a status change alone is not an edit).', null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to=settings.AUTH_USER_MODEL),
        ),
        migrations.AddField(
            model_name='digest',
            name='status_changed_at',
            field=models.DateTimeField(blank=True, editable=False, help_text='When it entered its current status through the workflow: for an item in review, when it was submitted; for a draft, when it was returned to draft. Empty: created in this status, or moved before this was recorded.', null=True),
        ),
        migrations.AddField(
            model_name='digest',
            name='status_changed_by',
            field=models.ForeignKey(blank=True, db_index=False, editable=False, help_text='Who moved it into its current status (submitted it, returned it to draft …).', null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to=settings.AUTH_USER_MODEL),
        ),
        migrations.AddIndex(
            model_name='digest',
            index=models.Index(condition=models.Q(('status', 'draft')), fields=['created_by', '-updated_at'], name='digest_drafts_by_creator'),
        ),
        migrations.AddIndex(
            model_name='digest',
            index=models.Index(condition=models.Q(('status', 'draft')), fields=['edited_by', '-updated_at'], name='digest_drafts_by_editor'),
        ),
        migrations.AddIndex(
            model_name='reference',
            index=models.Index(fields=['repository', 'created_at'], name='reference_repository_created'),
        ),
        migrations.RunPython(from_revisions, migrations.RunPython.noop),
        SAVE_TRIGGERS,
    ]
