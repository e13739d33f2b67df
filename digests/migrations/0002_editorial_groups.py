"""Create the two editorial groups.

Editors write and revise drafts and submit them for review. Publishers may also
approve, publish, schedule and archive -- the ``publish_*`` permissions are what
the workflow checks (publishing.workflow), so membership is the whole switch.
Users still need "staff status" to log into the admin.
"""
from django.contrib.auth.management import create_permissions
from django.db import migrations

EDITOR_PERMISSIONS = {
    "digests": {
        "digest": ["view", "add", "change"],
        "digestreference": ["view", "add", "change", "delete"],
        "actionitem": ["view", "add", "change", "delete"],
        "faqentry": ["view", "add", "change", "delete"],
        "reference": ["view", "add", "change"],
        "repository": ["view", "add"],
        "topic": ["view", "add"],  # a digest about a new topic needs the topic first
    },
    "blog": {
        "post": ["view", "add", "change"],
        "postauthor": ["view", "add", "change", "delete"],
        "taggedpost": ["view", "add", "change", "delete"],
        "author": ["view", "add", "change"],
    },
    "taggit": {"tag": ["view", "add"]},
}
PUBLISHER_EXTRA = {
    "digests": {
        "digest": ["delete", "publish"],
        "reference": ["delete"],
        "repository": ["change", "delete"],
        "topic": ["change", "delete"],
    },
    "blog": {"post": ["delete", "publish"], "author": ["delete"]},
    "taggit": {"tag": ["change", "delete"]},
}


def codenames(spec):
    for app_label, models in spec.items():
        for model, actions in models.items():
            for action in actions:
                yield app_label, f"{action}_{model}"


def create_groups(apps, schema_editor):
    # Permissions are normally created after migrate; make sure they exist now.
    for app_config in apps.get_app_configs():
        app_config.models_module = True
        create_permissions(app_config, apps=apps, verbosity=0)
        app_config.models_module = None

    Group = apps.get_model("auth", "Group")
    Permission = apps.get_model("auth", "Permission")

    def permissions(spec):
        return [
            Permission.objects.get(content_type__app_label=app_label, codename=codename)
            for app_label, codename in codenames(spec)
        ]

    editors, _ = Group.objects.get_or_create(name="Editors")
    editors.permissions.set(permissions(EDITOR_PERMISSIONS))
    publishers, _ = Group.objects.get_or_create(name="Publishers")
    publishers.permissions.set(permissions(EDITOR_PERMISSIONS) + permissions(PUBLISHER_EXTRA))


def remove_groups(apps, schema_editor):
    apps.get_model("auth", "Group").objects.filter(name__in=["Editors", "Publishers"]).delete()


class Migration(migrations.Migration):
    dependencies = [
        ("digests", "0001_initial"),
        ("blog", "0001_initial"),
        ("taggit", "0006_rename_taggeditem_content_type_object_id_taggit_tagg_content_8fc721_idx"),
        ("auth", "0012_alter_user_first_name_max_length"),
        ("contenttypes", "0002_remove_content_type_name"),
    ]

    operations = [migrations.RunPython(create_groups, remove_groups)]
