"""Which event closes the gap between what readers see of an item and what subscribers were told.

Run by workers (``outbound.outbox``), never in the writing request. For one item, against the
latest `Message` about it:

- public now, its publication not yet announced → ``*.published``. That is: the writes being
  announced made it public (it was not before them), or it is back after an ``*.unpublished``, or it
  is a scheduled item whose time came with no message since (``unannounced``);
- public now otherwise → ``*.updated``, only if the JSON subscribers see changed. Also when no
  message about the item was ever written: an endpoint created after the item was published hears
  of its changes, never of the item as new (issue 39: a retitled reference made a digest published
  days before "published" again);
- not public now, but announced (or public before the writes) → ``*.unpublished``;
- otherwise (a draft edit, a scheduled item still in the future) → nothing.

``*.published`` is thus sent once per publication: when the item is published, or at its scheduled
time to the endpoints that existed then. The payload follows the Standard Webhooks envelope:
``{"type", "timestamp", "data"}``, where ``data`` is exactly the API's detail JSON (`PostOut`, `DigestOut`).
"""
import json
from datetime import timedelta

from django.db import transaction
from django.db.models import Exists, OuterRef
from django.utils import timezone

from api.responses import detail_json
from blog.models import Post
from blog.schemas import PostOut
from digests.models import Digest
from digests.schemas import DigestOut

from .delivery import fan_out
from .models import Endpoint, Message

#: subject name -> (model, detail schema, queryset with what the schema shows)
SUBJECTS = {
    "post": (Post, PostOut, lambda: Post.objects.with_listing_data()),
    "digest": (Digest, DigestOut, lambda: Digest.objects.with_page_data()),
}
SUBJECT_OF = {model: name for name, (model, _, _) in SUBJECTS.items()}
VISIBLE_TYPES = ("published", "updated")  # what follows the dot: "post.unpublished" ends with "published"
#: How far back a scheduled item's time may lie for it still to be announced as published (the
#: sweep runs every 30 s; an item whose time passed longer ago while nothing ran is not news).
DUE_LOOKBACK = timedelta(days=1)


def current_json(subject: str, pk: int) -> dict | None:
    """The API's detail JSON of the item if it is public now, else None."""
    _, schema, queryset = SUBJECTS[subject]
    found = queryset().published().filter(pk=pk).first()
    return None if found is None else json.loads(detail_json(schema, found))


def identity(subject: str, pk: int) -> dict:
    """What an ``*.unpublished`` event says of an item never announced: which one it is, nothing unpublished."""
    model = SUBJECTS[subject][0]
    return model._base_manager.filter(pk=pk).values("id", "slug").first() or {"id": pk}


def last_said(subject: str, pk: int) -> Message | None:
    return Message.objects.filter(subject_type=subject, subject_id=pk).order_by("-pk").first()


def unannounced(subject: str, now=None):
    """Public items of `subject` whose scheduled time came within ``DUE_LOOKBACK`` and has not been
    announced: no message about them since, and an endpoint existed at that time to be told."""
    now = now or timezone.now()
    model = SUBJECTS[subject][0]
    told = Message.objects.filter(subject_type=subject, subject_id=OuterRef("pk"), created_at__gte=OuterRef("published_at"))
    listened = Endpoint.objects.filter(created_at__lte=OuterRef("published_at"))
    return model.objects.published(now).filter(published_at__gt=now - DUE_LOOKBACK).filter(
        ~Exists(told), Exists(listened))


def announce(subject: str, pk: int, was_public: bool = True, gone: dict | None = None) -> Message | None:
    """Compare what is public now with what subscribers were told, and send the event that closes the gap.

    `was_public`: whether readers saw the item before the writes being announced; `gone`: a deleted
    item's last public JSON.
    """
    data = None if gone is not None else current_json(subject, pk)
    last = last_said(subject, pk)
    if data is not None:
        if last is None:
            new = not was_public or unannounced(subject).filter(pk=pk).exists()
        else:
            new = not told_public(last)
        if new:
            return send(f"{subject}.published", data, subject, pk)
        if last is None or last.payload.get("data") != data:
            return send(f"{subject}.updated", data, subject, pk)
        return None
    if (told_public(last) if last else was_public):
        stale = gone or (last.payload.get("data") if last else identity(subject, pk))
        return send(f"{subject}.unpublished", stale, subject, pk)
    return None


def told_public(message: Message) -> bool:
    """Whether the message told subscribers the item is public (``*.published``, ``*.updated``)."""
    return message.type.rpartition(".")[2] in VISIBLE_TYPES


def send(event_type: str, data: dict, subject: str = "", pk: int | None = None) -> Message:
    """Write the message and queue it to every endpoint that wants it (after this transaction commits)."""
    now = timezone.now()
    payload = {"type": event_type, "timestamp": now.isoformat().replace("+00:00", "Z"), "data": data}
    with transaction.atomic():
        message = Message.objects.create(type=event_type, payload=payload, subject_type=subject,
                                         subject_id=pk, created_at=now)
        fan_out(message)
    return message
