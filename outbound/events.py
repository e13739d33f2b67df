"""Which writes become events, and what an event says.

Only what readers can see is ever sent. Before a post or digest is saved we note whether its
stored row is public (``pre_save``, as reader/public_changes.py does); once the transaction
commits we compare with what is public now and with what subscribers were last told (the
subject's latest `Message`):

- public now, not announced as public before → ``*.published``;
- public now and before → ``*.updated``, only if the JSON subscribers see changed;
- not public now, but announced (or public before the write) → ``*.unpublished``;
- otherwise (a draft edit, a scheduled item still in the future) → nothing.

A scheduled item becomes public when its time passes, with no write: `announce_due`, run by the
beat sweep every minute, sends its ``*.published`` then, never before.

What an item shows also changes with writes to other rows: a post's bylines and tags, an author's
name or handle, a tag's name; a digest's citations, action items and FAQ, a cited reference, a
repository's or topic's name (each re-renders the digests showing it and says so with
``publishing.signals.content_changed``). Each of those announces the published items concerned
after the commit (``announce_shown``): the comparison above decides whether an ``*.updated`` is due.

The payload follows the Standard Webhooks envelope: ``{"type", "timestamp", "data"}``, where
``data`` is exactly the API's detail JSON (`PostOut`, `DigestOut`).
"""
import json
from datetime import timedelta

from django.db import transaction
from django.db.models import Exists, OuterRef
from django.db.models.signals import m2m_changed, post_delete, post_save, pre_delete, pre_save
from django.utils import timezone
from taggit.models import Tag

from api.responses import detail_json
from blog.models import Author, Post, PostAuthor, TaggedPost
from blog.schemas import PostOut
from digests.models import Digest
from digests.schemas import DigestOut
from publishing.signals import content_changed
from publishing.transactions import OnCommit, pending_callback, register_callback

from .models import Endpoint, Message

#: subject name -> (model, detail schema, queryset with what the schema shows)
SUBJECTS = {
    "post": (Post, PostOut, lambda: Post.objects.with_listing_data()),
    "digest": (Digest, DigestOut, lambda: Digest.objects.with_page_data()),
}
SUBJECT_OF = {model: name for name, (model, _, _) in SUBJECTS.items()}
VISIBLE_TYPES = ("published", "updated")
#: Where the open transaction's ``Announcements`` are kept on the connection (``publishing.transactions``).
PENDING = "outbound_pending_announcements"
#: How far back the sweep looks for scheduled items whose time has come (older ones were announced then).
DUE_LOOKBACK = timedelta(days=1)


def connect_signals() -> None:
    for model in SUBJECT_OF:
        pre_save.connect(remember_visibility, sender=model, dispatch_uid=f"outbound-pre-{model.__name__}")
        post_save.connect(on_saved, sender=model, dispatch_uid=f"outbound-save-{model.__name__}")
        pre_delete.connect(remember_deleted, sender=model, dispatch_uid=f"outbound-pre-delete-{model.__name__}")
        post_delete.connect(on_deleted, sender=model, dispatch_uid=f"outbound-delete-{model.__name__}")
    content_changed.connect(on_content_changed, dispatch_uid="outbound-content-changed")
    for link in (PostAuthor, TaggedPost):
        post_save.connect(on_post_link, sender=link, dispatch_uid=f"outbound-save-{link.__name__}")
        post_delete.connect(on_post_link, sender=link, dispatch_uid=f"outbound-delete-{link.__name__}")
    m2m_changed.connect(on_post_tags, sender=Post.tags.through, dispatch_uid="outbound-post-tags")
    post_save.connect(on_author_or_tag, sender=Author, dispatch_uid="outbound-author")
    post_save.connect(on_author_or_tag, sender=Tag, dispatch_uid="outbound-tag")


def listening() -> bool:
    """Whether any endpoint listens: without one, a content write costs this one query and nothing else."""
    return Endpoint.objects.filter(enabled=True).exists()


def remember_visibility(sender, instance, raw=False, **kwargs) -> None:
    """Before a save: whether the stored row is public right now (a later save may make it a draft)."""
    instance._outbound_listening = not raw and listening()
    if instance._outbound_listening and instance.pk is not None:
        instance._outbound_was_public = sender.objects.published().filter(pk=instance.pk).exists()


def on_saved(sender, instance, raw=False, **kwargs) -> None:
    if raw or not getattr(instance, "_outbound_listening", True):
        return
    announce_after_commit({(SUBJECT_OF[sender], instance.pk): getattr(instance, "_outbound_was_public", False)})


def remember_deleted(sender, instance, **kwargs) -> None:
    """Before a delete: the last public JSON of a public item (its related rows go with it)."""
    subject = SUBJECT_OF[sender]
    if listening() and sender.objects.published().filter(pk=instance.pk).exists():
        instance._outbound_last_json = current_json(subject, instance.pk)


def on_deleted(sender, instance, **kwargs) -> None:
    data = getattr(instance, "_outbound_last_json", None)
    if data is not None:
        subject, pk = SUBJECT_OF[sender], instance.pk
        transaction.on_commit(lambda: send(f"{subject}.unpublished", data, subject, pk))


def announce_shown(model, items) -> None:
    """After the commit, announce each published item of `model` among `items` (ids, or a query of them).

    For writes that change what an item shows without saving the item. The ids are read now, in the
    writing transaction; ``announce`` compares with what subscribers were told, so an item whose
    JSON did not change (a card re-rendered for nothing the API shows) sends nothing.
    """
    if not listening():
        return
    subject = SUBJECT_OF[model]
    published = model.objects.published().filter(pk__in=items).values_list("pk", flat=True)
    announce_after_commit({(subject, pk): False for pk in published})


def announce_after_commit(items: dict[tuple[str, int], bool]) -> None:
    """Announce these (subject, pk) items once the transaction commits (now, outside one), each once
    however many writes of the transaction touched it. The value: whether the item was public before
    the transaction (``announce``'s `was_public`), true if any write saw it so."""
    if not items:
        return
    pending = pending_callback(PENDING)
    if pending is None:
        register_callback(PENDING, Announcements(items))
        return
    for item, was_public in items.items():
        pending.items[item] = pending.items.get(item, False) or was_public


class Announcements(OnCommit):
    """This transaction's items to announce once it commits: a post saved with its byline and tags, or a
    digest given twenty citations in one save, is compared with what subscribers were told once."""

    def __init__(self, items: dict[tuple[str, int], bool]):
        self.items = dict(items)

    def run(self) -> None:
        for (subject, pk), was_public in sorted(self.items.items()):
            announce(subject, pk, was_public=was_public)


def on_content_changed(sender, pks=None, **kwargs) -> None:
    """Rows written without model signals (a digest re-rendered because a citation, a reference or a
    repository's name changed). An unknown set (``pks=None``, ``manage.py refresh_cards``) is a
    re-render of stored parts, which the API does not show: nothing to announce."""
    if sender in SUBJECT_OF and pks is not None:
        announce_shown(sender, pks)


def on_post_link(sender, instance, raw=False, origin=None, **kwargs) -> None:
    """A byline or tagging row saved or deleted: its post's authors or tags changed (not while the post
    itself is being deleted: its unpublish is announced then)."""
    if raw or isinstance(origin, Post) or getattr(origin, "model", None) is Post:
        return
    announce_shown(Post, [getattr(instance, "post_id", None) or instance.content_object_id])


def on_post_tags(sender, instance, action, reverse=False, pk_set=None, **kwargs) -> None:
    """``post.tags.add()``/``remove()``/``clear()``; from the tag's side, the posts in `pk_set`."""
    if action in ("post_add", "post_remove", "post_clear"):
        announce_shown(Post, (pk_set or ()) if reverse else [instance.pk])


def on_author_or_tag(sender, instance, raw=False, created=False, **kwargs) -> None:
    """A renamed author (or new handle) or tag shows in every post of theirs."""
    if raw or created:
        return
    posts = instance.posts.all() if sender is Author else Post.objects.filter(tagged_items__tag=instance)
    announce_shown(Post, posts.values("pk"))


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


def announce(subject: str, pk: int, was_public: bool = False) -> Message | None:
    """Compare what is public now with what subscribers were told, and send the event that closes the gap."""
    data = current_json(subject, pk)
    last = last_said(subject, pk)
    told_public = last.type.endswith(VISIBLE_TYPES) if last else was_public
    if data is not None:
        if not told_public:
            return send(f"{subject}.published", data, subject, pk)
        if last is None or last.payload.get("data") != data:
            return send(f"{subject}.updated", data, subject, pk)
        return None
    if told_public:
        stale = last.payload.get("data") if last else identity(subject, pk)
        return send(f"{subject}.unpublished", stale, subject, pk)
    return None


def send(event_type: str, data: dict, subject: str = "", pk: int | None = None) -> Message:
    """Write the message and queue it to every endpoint that wants it (after this transaction commits)."""
    from .delivery import fan_out

    now = timezone.now()
    payload = {"type": event_type, "timestamp": now.isoformat().replace("+00:00", "Z"), "data": data}
    with transaction.atomic():
        message = Message.objects.create(type=event_type, payload=payload, subject_type=subject,
                                         subject_id=pk, created_at=now)
        fan_out(message)
    return message


def announce_due(now=None) -> int:
    """Send ``*.published`` for scheduled items whose time has come since they were last written."""
    if not listening():
        return 0
    now = now or timezone.now()
    sent = 0
    for subject, (model, _, _) in SUBJECTS.items():
        told = Message.objects.filter(subject_type=subject, subject_id=OuterRef("pk"),
                                      created_at__gte=OuterRef("published_at"))
        due = model.objects.published(now).filter(published_at__gt=now - DUE_LOOKBACK).filter(~Exists(told))
        for pk in due.values_list("pk", flat=True):
            sent += announce(subject, pk) is not None
    return sent
