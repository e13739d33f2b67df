"""Give the editorial groups what each needs of the newsletters app (issue 39); until now they held nothing.

A subscriber list is readers' personal data: who reads what, at which address. Whoever does not work
on the list should not see it (GDPR's data minimisation), so the two roles differ:

- **Editors** write. They see the messages — whether what they wrote went out, and how far it got
  (``view_message``: the counts by state; the failed deliveries' addresses are only shown to users
  who may view subscribers) — and they mail a test of a draft to themselves, which needs only the
  item's own permissions. They see no subscriber, import or export.
- **Publishers** answer for what is mailed: they publish, which mails every follower. They also keep
  the list: view and export it (``view_subscriber``), import a CSV (``add_subscriber``), correct or
  unsubscribe someone who wrote in, and erase someone's data on request (``change``/``delete``, with
  the subscriptions inline), and add a suppression by hand ("never mail me"). Lifting a suppression
  (``delete_suppression``) is left to superusers: it mails again an address that bounced or complained.

``Delivery`` has no admin; nobody needs its permissions. Adding is idempotent and leaves whatever
else the groups hold alone; unapplying takes back exactly these. ``grant`` also runs from the tests'
``editorial_group`` after a transactional test's flush removed the groups. docs/operations.md,
"Roles and newsletters", says the same for operators.
"""
from django.contrib.auth.management import create_permissions
from django.db import migrations

EDITORS = ["view_message"]
PUBLISHERS = [*EDITORS, "view_subscriber", "add_subscriber", "change_subscriber", "delete_subscriber",
              "view_subscription", "add_subscription", "change_subscription", "delete_subscription",
              "view_suppression", "add_suppression"]
GRANTS = {"Editors": EDITORS, "Publishers": PUBLISHERS}


def _permissions(apps, codenames):
    Permission = apps.get_model("auth", "Permission")
    return list(Permission.objects.filter(content_type__app_label="newsletters", codename__in=codenames))


def grant(apps, schema_editor):
    # Permissions are normally created after migrate (post_migrate): make sure they exist now.
    # create_permissions skips an app whose models_module is unset, as a migration's app state has it.
    app_config = apps.get_app_config("newsletters")
    models_module = getattr(app_config, "models_module", None)
    app_config.models_module = True
    create_permissions(app_config, apps=apps, verbosity=0)
    app_config.models_module = models_module
    for group in apps.get_model("auth", "Group").objects.filter(name__in=GRANTS):
        group.permissions.add(*_permissions(apps, GRANTS[group.name]))


def revoke(apps, schema_editor):
    for group in apps.get_model("auth", "Group").objects.filter(name__in=GRANTS):
        group.permissions.remove(*_permissions(apps, GRANTS[group.name]))


class Migration(migrations.Migration):
    dependencies = [
        ("newsletters", "0005_address_lower_indexes"),
        ("digests", "0002_editorial_groups"),
        ("auth", "0012_alter_user_first_name_max_length"),
        ("contenttypes", "0002_remove_content_type_name"),
    ]

    operations = [migrations.RunPython(grant, revoke)]
