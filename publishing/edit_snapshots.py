"""The state an admin change form was opened at: its fields as comparable text, signed for its item.

The common ancestor of ``publishing.edit_conflicts``' three-way merge (see there why a snapshot
and not the revision history).
"""
import functools
import hashlib
import json

from django.core import signing
from django.core.exceptions import FieldDoesNotExist

from .text import normalised

EDIT_BASE = "_edit_base"
SALT = "publishing.edit_conflicts"


# --- States: what a form's fields hold, as comparable text -----------------------------------------

def editable_field(instance, name):
    try:
        field = instance._meta.get_field(name)
    except FieldDoesNotExist:
        return None
    return field if field.editable and not field.primary_key and (field.concrete or field.many_to_many) else None


def field_state(instance, name, value=None) -> str:
    """One model field of `instance` as text: equal texts are equal values, whatever the field.

    Text is normalised (``publishing.text.normalised``): a textarea comes back from the browser with
    ``\\r\\n`` line endings and stripped, and must still equal the ``\\n`` text it was opened with.
    """
    field = instance._meta.get_field(name)
    if field.many_to_many:
        related = value if value is not None else (field.value_from_object(instance) if instance.pk else [])
        return json.dumps(sorted(str(getattr(item, "pk", item)) for item in related))
    return normalised(field.value_to_string(instance))


def form_state(form, instance) -> dict[str, str]:
    """`instance`'s values of the model fields `form` edits."""
    return {name: field_state(instance, name) for name in form.fields if editable_field(instance, name)}


def _item_key(item) -> list:
    return [item._meta.label_lower, str(item.pk)]


def sign(base: dict, item) -> str:
    """`base` signed for `item` alone: a snapshot of another item cannot pass for this one's ancestor."""
    return signing.dumps({**base, "item": _item_key(item)}, salt=SALT, compress=True)


@functools.lru_cache(maxsize=16)
def _unsigned(text: str):
    """The snapshot a form carried, read once per request however many inline rows ask (treat as read-only)."""
    try:
        return signing.loads(text, salt=SALT)
    except signing.BadSignature:
        return False


def opened_base(data, item):
    """The snapshot of `item` in a form's POST data: a dict, None if the form carried none, False if it
    was tampered with or is another item's (a form opened on one post and posted to another)."""
    text = data.get(EDIT_BASE) if data is not None else None
    if not text:
        return None
    base = _unsigned(text)
    return base if base and base.get("item") == _item_key(item) else False


def state_version(state: dict) -> str:
    """The version of an item that has no API ETag: a digest of what its change form shows."""
    return '"%s"' % hashlib.sha256(json.dumps(state, sort_keys=True).encode()).hexdigest()[:32]


def shown(instance, name) -> str:
    """A field's value as an editor reads it (a related item's name, a choice's label)."""
    field = instance._meta.get_field(name)
    if field.many_to_many:
        return ", ".join(str(item) for item in field.value_from_object(instance)) if instance.pk else ""
    if field.is_relation:
        return str(getattr(instance, name) or "")
    value = field.value_from_object(instance)
    if field.choices:
        return str(dict(field.flatchoices).get(value, value))
    return "" if value is None else str(value)
