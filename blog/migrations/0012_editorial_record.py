"""The editorial record on each post (who created, last edited and moved it: the newsroom reads it),
filled from the revision history for what that history proves (publishing/editorial_records.py)."""

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models

from publishing.editorial_records import backfill
from publishing.search_migrations import kept_sqlite_triggers

# Unapplying removes foreign keys, which makes Django remake the table on SQLite: its triggers are kept.
RESTORE_TRIGGERS, SAVE_TRIGGERS = kept_sqlite_triggers("blog_post")


def from_revisions(apps, schema_editor):
    backfill(apps, "blog", "post")


class Migration(migrations.Migration):

    dependencies = [
        ('blog', '0011_post_search_fts'),
        ('taggit', '0006_rename_taggeditem_content_type_object_id_taggit_tagg_content_8fc721_idx'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
        ('reversion', '0002_add_index_on_version_for_content_type_and_db'),
        ('contenttypes', '0002_remove_content_type_name'),
    ]

    operations = [
        RESTORE_TRIGGERS,
        migrations.AddField(
            model_name='post',
            name='created_by',
            field=models.ForeignKey(blank=True, db_index=False, editable=False, help_text='Who created it in the admin or over the API (empty: ingestion, an import, or not recorded).', null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to=settings.AUTH_USER_MODEL),
        ),
        migrations.AddField(
            model_name='post',
            name='edited_by',
            field=models.ForeignKey(blank=True, db_index=False, editable=False, help_text='Who last changed its content in the admin or over the API (a status change alone is not an edit).', null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to=settings.AUTH_USER_MODEL),
        ),
        migrations.AddField(
            model_name='post',
            name='status_changed_at',
            field=models.DateTimeField(blank=True, editable=False, help_text='When it entered its current status through the workflow: for an item in review, when it was submitted; for a draft, when it was returned to draft. Empty: created in this status, or moved before this was recorded.', null=True),
        ),
        migrations.AddField(
            model_name='post',
            name='status_changed_by',
            field=models.ForeignKey(blank=True, db_index=False, editable=False, help_text='Who moved it into its current status (submitted it, returned it to draft …).', null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to=settings.AUTH_USER_MODEL),
        ),
        migrations.AddIndex(
            model_name='post',
            index=models.Index(condition=models.Q(('status', 'draft')), fields=['created_by', '-updated_at'], name='post_drafts_by_creator'),
        ),
        migrations.AddIndex(
            model_name='post',
            index=models.Index(condition=models.Q(('status', 'draft')), fields=['edited_by', '-updated_at'], name='post_drafts_by_editor'),
        ),
        migrations.RunPython(from_revisions, migrations.RunPython.noop),
        SAVE_TRIGGERS,
    ]
