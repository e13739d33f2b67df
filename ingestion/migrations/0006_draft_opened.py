"""When an editor first opened each drafted digest (the newsroom lists those nobody opened), filled from
revision history where it proves one: a digest saved by a person (a revision credited to a user, in the
admin or over the API) was opened by them by then. A draft only looked at left no trace and shows as
unopened until someone opens it."""

import django.db.models.deletion
import django.utils.timezone
from django.conf import settings
from django.db import migrations, models


def opened_from_revisions(apps, schema_editor):
    ContentType = apps.get_model("contenttypes", "ContentType")
    Version = apps.get_model("reversion", "Version")
    DigestDraft = apps.get_model("ingestion", "DigestDraft")
    content_type = ContentType.objects.filter(app_label="digests", model="digest").first()
    if content_type is None:
        return
    first: dict[str, tuple] = {}
    saved = Version.objects.filter(content_type=content_type, revision__user__isnull=False).order_by(
        "revision__date_created", "pk").values_list("object_id", "revision__date_created", "revision__user_id")
    for object_id, when, user_id in saved.iterator():
        first.setdefault(object_id, (when, user_id))
    drafts = [draft for draft in DigestDraft.objects.filter(opened_at__isnull=True) if str(draft.digest_id) in first]
    for draft in drafts:
        draft.opened_at, draft.opened_by_id = first[str(draft.digest_id)]
    DigestDraft.objects.bulk_update(drafts, ["opened_at", "opened_by"], batch_size=500)


class Migration(migrations.Migration):

    dependencies = [
        ('ingestion', '0005_webhookdelivery_retry_at'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
        ('reversion', '0002_add_index_on_version_for_content_type_and_db'),
        ('contenttypes', '0002_remove_content_type_name'),
        ('digests', '0018_editorial_record'),
    ]

    operations = [
        migrations.AddField(
            model_name='digestdraft',
            name='opened_at',
            field=models.DateTimeField(blank=True, editable=False, help_text="When someone who may edit digests first opened the digest's change page (empty: not yet).", null=True),
        ),
        migrations.AddField(
            model_name='digestdraft',
            name='opened_by',
            field=models.ForeignKey(blank=True, editable=False, help_text='Who opened it first.', null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to=settings.AUTH_USER_MODEL),
        ),
        migrations.AlterField(
            model_name='digestdraft',
            name='generated_at',
            field=models.DateTimeField(default=django.utils.timezone.now, help_text='When draft_digest last generated it: references arriving later are not in it yet (the newsroom counts them).'),
        ),
        migrations.RunPython(opened_from_revisions, migrations.RunPython.noop),
    ]
