"""Give the editorial groups the images app: without it neither role could upload (404 on the upload page).

Editors and Publishers both put images in what they write, so both view, upload (add) and
re-describe (change: alt text, caption, credit) images; only Publishers delete one, as they alone
delete posts and digests. Deleting an image a published page shows is refused whoever asks
(``ImageUse``), so deleting is only ever tidying. ``ImageUse`` rows are derived on save and have
no admin, so nobody needs their permissions.

The other apps added after the groups (digests 0002) grant the roles nothing, on purpose:
ingestion, outbound, edge and the retention records are the operators' (their remedies are
configuration, not writing); accounts lets every staff user manage their own tokens and
preferences without a permission; drafted digests are opened with the digests' own permissions.
docs/operations.md, "Roles", keeps the list.

Adding to the groups is idempotent, and leaves whatever else they hold alone; unapplying takes
back exactly these. ``grant`` also runs from the tests' ``editorial_group`` after a transactional
test's flush removed the groups' rows.
"""
from django.contrib.auth.management import create_permissions
from django.db import migrations

GRANTS = {
    "Editors": ["view_image", "add_image", "change_image"],
    "Publishers": ["view_image", "add_image", "change_image", "delete_image"],
}


def _permissions(apps, codenames):
    Permission = apps.get_model("auth", "Permission")
    return list(Permission.objects.filter(content_type__app_label="images", codename__in=codenames))


def grant(apps, schema_editor):
    # Permissions are normally created after migrate (post_migrate); make sure they exist now.
    # (create_permissions skips an app without a models module, which a migration's app state is.)
    app_config = apps.get_app_config("images")
    models_module, app_config.models_module = getattr(app_config, "models_module", None), True
    create_permissions(app_config, apps=apps, verbosity=0)
    app_config.models_module = models_module
    for group in apps.get_model("auth", "Group").objects.filter(name__in=GRANTS):
        group.permissions.add(*_permissions(apps, GRANTS[group.name]))


def revoke(apps, schema_editor):
    for group in apps.get_model("auth", "Group").objects.filter(name__in=GRANTS):
        group.permissions.remove(*_permissions(apps, GRANTS[group.name]))


class Migration(migrations.Migration):
    dependencies = [
        ("images", "0001_initial"),
        ("digests", "0002_editorial_groups"),
        ("auth", "0012_alter_user_first_name_max_length"),
        ("contenttypes", "0002_remove_content_type_name"),
    ]

    operations = [migrations.RunPython(grant, revoke)]
