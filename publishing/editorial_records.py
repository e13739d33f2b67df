"""The editorial record's backfill: who created, last edited and last moved each item, read once
from its revision history (django-reversion) by the migrations that add the record's fields.

The newsroom page reads the record from the item's own row (``PublishableModel.created_by`` …),
never from revisions per request. For items older than the record, history tells only part
of the story, and the backfill writes only what it tells:

- ``created_by``: the person credited with the item's first revision, if that revision was
  written when the item was (within ``CREATION_WINDOW`` of ``created_at``). An item imported
  or drafted without a revision and edited later has no known creator.
- ``edited_by``: the creator, then whoever is credited with the last revision whose own source
  fields (not its status or publication time, nor what save() derives) differ from the
  revision before. A change to citations, bylines or tags alone leaves no trace here.
- ``status_changed_at`` / ``status_changed_by``: the last revision whose status differs from
  the revision before, if the item still has that status. An item created in its status, or
  moved outside any revision (a script, ``update()``), keeps them empty.

What stays empty shows as "not recorded" in the newsroom.
"""
import datetime
import json
from itertools import pairwise

CREATION_WINDOW = datetime.timedelta(minutes=1)
#: Source fields that are not content: a revision changing only these is a workflow move, not an edit.
NOT_CONTENT = {"status", "published_at", "created_at", "updated_at"}
BATCH = 500


def _content_names(model) -> list[str]:
    return sorted(field.name for field in model._meta.concrete_fields
                  if field.editable and not field.primary_key and field.name not in NOT_CONTENT)


def history(apps, model) -> dict[int, list[tuple]]:
    """Each item's revisions, oldest first: ``{pk: [(when, user id, status, content), …]}``."""
    ContentType = apps.get_model("contenttypes", "ContentType")
    Version = apps.get_model("reversion", "Version")
    content_type = ContentType.objects.filter(app_label=model._meta.app_label, model=model._meta.model_name).first()
    if content_type is None:
        return {}
    names = _content_names(model)
    rows = Version.objects.filter(content_type=content_type, format="json").order_by(
        "revision__date_created", "pk").values_list("object_id", "revision__date_created", "revision__user_id",
                                                    "serialized_data")
    found: dict[int, list[tuple]] = {}
    for object_id, when, user_id, data in rows.iterator():
        try:
            fields = json.loads(data)[0]["fields"]
            pk = int(object_id)
        except (ValueError, LookupError, TypeError):
            continue  # a version this code cannot read tells nothing
        content = json.dumps([fields.get(name) for name in names])
        found.setdefault(pk, []).append((when, user_id, fields.get("status"), content))
    return found


def record_from(revisions: list[tuple], created_at, status: str) -> dict:
    """The editorial record that an item's revisions prove (see the module docstring)."""
    first_at, first_user, _, _ = revisions[0]
    creator = first_user if abs(first_at - created_at) <= CREATION_WINDOW else None
    record = {"created_by_id": creator, "edited_by_id": creator, "status_changed_at": None,
              "status_changed_by_id": None}
    for before, (when, user_id, moved_to, content) in pairwise(revisions):
        if content != before[3]:
            record["edited_by_id"] = user_id
        if moved_to != before[2]:
            record["status_changed_at"], record["status_changed_by_id"] = when, user_id
    if revisions[-1][2] != status:  # moved since, outside any revision: the last recorded move is not its own
        record["status_changed_at"] = record["status_changed_by_id"] = None
    return record


def backfill(apps, app_label: str, model_name: str) -> int:
    """Write the record history proves onto every item that has revisions; returns how many were written."""
    model = apps.get_model(app_label, model_name)
    revisions = history(apps, model)
    fields = ["created_by", "edited_by", "status_changed_at", "status_changed_by"]
    pks, written = sorted(revisions), 0
    for start in range(0, len(pks), BATCH):
        items = model.objects.filter(pk__in=pks[start:start + BATCH]).only("pk", "created_at", "status")
        changed = []
        for item in items:
            record = record_from(revisions[item.pk], item.created_at, item.status)
            if any(value is not None for value in record.values()):
                for name, value in record.items():
                    setattr(item, name, value)
                changed.append(item)
        model.objects.bulk_update(changed, fields)
        written += len(changed)
    return written
