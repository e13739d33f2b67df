"""Which writes owe an announcement: signal receivers that record them in the writing transaction.

Only what readers can see is ever sent. Before a post or digest is saved we note whether its
stored row is public (``pre_save``, as reader/public_changes.py does); the save then records the
item as owed an announcement (``announce_after_commit``), with that answer. What the item shows
also changes with writes to other rows: a post's bylines and tags, an author's name or handle, a
tag's name; a digest's citations, action items and FAQ, a cited reference, a repository's or
topic's name (each re-renders the digests showing it and says so with
``publishing.signals.content_changed``). Those record the published items concerned
(``announce_shown``): one ``INSERT … SELECT`` for a set of any size.

Nothing here builds an item's JSON or decides an event: the rows (``outbound.outbox``) are
announced by a worker after the commit, which compares with what subscribers were last told
(``outbound.announcing``). A scheduled item becomes public when its time passes, with no write:
``outbox.announce_due``, run by the beat sweep every 30 s, sends its ``*.published`` then.
"""
from django.db.models.signals import m2m_changed, post_delete, post_save, pre_delete, pre_save
from taggit.models import Tag

from blog import signals as blog_signals
from blog.models import Author, Post, PostAuthor, TaggedPost
from digests import signals as digests_signals
from digests.models import Digest, Repository, Topic
from publishing.signals import content_changed
from publishing.transactions import OnCommit, pending_callback, register_callback

from . import outbox
from .announcing import SUBJECT_OF, current_json
from .models import Endpoint

#: Where the open transaction's ``Announcements`` are kept on the connection (``publishing.transactions``).
PENDING = "outbound_pending_announcements"


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
    for model in (Topic, Repository):
        post_save.connect(on_topic_or_repository, sender=model, dispatch_uid=f"outbound-{model.__name__}")


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
        recorded(outbox.record({(SUBJECT_OF[sender], instance.pk): True}, last_data=data))


def announce_shown(model, items) -> None:
    """Record each published item of `model` among `items` (ids, or a query of them) as owed an announcement.

    For writes that change what an item shows without saving the item; the API other apps' writers
    reach through ``publishing.signals.content_changed`` (``announce_bulk_write(model, pks)``). Cheap
    whatever the number of items: a query is one ``INSERT … SELECT``, and no item's JSON is built
    here. The worker compares each with what subscribers were told, so an item whose JSON did not
    change (a card re-rendered for nothing the API shows) sends nothing.
    """
    if not listening():
        return
    if isinstance(items, (list, tuple, set)) and not items:
        return
    recorded(outbox.record_published(SUBJECT_OF[model], items))


def announce_after_commit(items: dict[tuple[str, int], bool]) -> None:
    """Record these saved (subject, pk) items as owed an announcement. The value: whether the item
    was public before the save (of several saves in one transaction, the first row's answer decides:
    ``outbox.was_public``).

    Every write records its own row, even for an item this transaction recorded already: the
    worker announces an item once whatever its number of rows (``outbox.announce_owed`` reads and
    deletes them all). Remembering in memory what was recorded lost events: a row written in a
    savepoint that was rolled back is gone, and a later save of the item in the same transaction
    then recorded nothing.
    """
    if items:
        recorded(outbox.record(items))


def recorded(rows: list[tuple[int, tuple[str, int]]]) -> None:
    """Queue the worker for these rows once the transaction commits (at once outside one)."""
    if not rows:
        return
    pending = pending_callback(PENDING)
    if pending is None:
        register_callback(PENDING, Announcements(rows), robust=True)
    else:
        pending.add(rows)


class Announcements(OnCommit):
    """This transaction's rows owed an announcement: on commit, their worker is queued (``outbox.queue``).

    A post saved with its byline and tags, or a digest given twenty citations in one save, is
    several rows but one comparison: the worker takes each item once with all its rows. Ids of rows
    a rolled-back savepoint removed are harmless: the worker finds nothing for them."""

    def __init__(self, rows: list[tuple[int, tuple[str, int]]]):
        self.ids: list[int] = []
        self.add(rows)

    def add(self, rows: list[tuple[int, tuple[str, int]]]) -> None:
        self.ids.extend(row_id for row_id, _ in rows)

    def run(self) -> None:
        outbox.queue(self.ids)


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
    """A renamed author (or new handle or slug) or tag shows in every post of theirs; a bio edit shows in
    none. What posts show of it is noted before the save by ``blog.signals`` (one snapshot for both apps)."""
    if raw or created or not blog_signals.shown_changed(sender, instance):
        return
    posts = instance.posts.all() if sender is Author else Post.objects.filter(tagged_items__tag=instance)
    announce_shown(Post, posts.values("pk"))


def on_topic_or_repository(sender, instance, raw=False, created=False, **kwargs) -> None:
    """A renamed topic or repository shows in every digest of it or citing it: recorded here, whoever
    re-renders the digests' stored parts and when (``digests.signals``: a worker), as the JSON reads it live.
    What digests show of it is noted before the save by ``digests.signals`` (a poll saving a repository
    changes none)."""
    if raw or created or not digests_signals.shown_changed(sender, instance):
        return
    digests = instance.digests.all() if sender is Topic else Digest.objects.filter(repository_links__repository=instance)
    announce_shown(Digest, digests.values("pk"))
