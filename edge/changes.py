"""Purges that follow content: model signals -> keys (``edge.affected``) -> a durable purge row (``edge.outbox``).

The keys of one transaction go into one row, written in that transaction and sent
once it commits (a rolled-back write purges nothing; a purge sent before the commit
would let the edge refetch the old page). A post or digest published for a later
time is purged again at that time (``apply_async(eta=...)``), and the beat sweep
(``edge.scheduling``) catches any such moment a task missed.

Which processes record purges (``enabled``): every one that has an edge configured,
and every one that shares a broker with workers (``EDGE_RECORD_PURGES``, on with
``REDIS_URL``) -- the worker that sends a purge decides where it goes, so an edit
from a maintenance shell or a cron job reaches the topology's edge although its own
settings name none (issue 25: such an edit never reached the edge). Only a process
with neither (``make run``: tasks inline, no edge) computes nothing.
"""
from django.conf import settings
from django.db import transaction
from django.db.models.signals import m2m_changed, post_delete, post_save, pre_save
from django.utils import timezone
from taggit.models import Tag

from blog.models import Post
from digests.models import Digest
from publishing.signals import content_changed
from publishing.workflow import Status
from reader import public_changes

from . import affected, outbox
from .keys import keys_of


def enabled() -> bool:
    """Whether writes here record purges: with an edge configured, or a broker shared with workers."""
    return settings.EDGE_PURGE_BACKEND != "none" or settings.EDGE_RECORD_PURGES


def purge_after_commit(keys) -> None:
    """Purge `keys` once the current transaction commits (at once outside one); durable (``edge.outbox``)."""
    outbox.record(keys)


def remember_before(sender, instance, raw=False, **kwargs) -> None:
    """Before a post or digest is saved: its stored status and time, to tell an edit from a (re)publication."""
    if enabled() and not raw and instance.pk is not None:
        instance._edge_before = sender._base_manager.filter(pk=instance.pk).values_list(
            "status", "published_at").first()


def remember_tag_name(sender, instance, raw=False, **kwargs) -> None:
    if enabled() and not raw and instance.pk is not None:
        instance._edge_name_before = Tag.objects.filter(pk=instance.pk).values_list("name", flat=True).first()


def purge_saved(sender, instance, raw=False, **kwargs) -> None:
    if enabled() and not raw and public_changes.is_public(sender, instance):
        purge_for(sender, instance, deleted=False)


def purge_deleted(sender, instance, **kwargs) -> None:
    if enabled() and public_changes.is_public(sender, instance):
        purge_for(sender, instance, deleted=True)


def purge_for(sender, instance, *, deleted: bool) -> None:
    keys = affected.keys_for_write(sender, instance, deleted=deleted)
    purge_after_commit(keys)
    if not deleted and sender in public_changes.PUBLISHABLE and scheduled(instance):
        purge_at_publication(instance)


def purge_at_publication(instance) -> None:
    """Queue, after commit, a purge at the moment a scheduled post or digest goes live; its keys are
    worked out then (tags or bylines may change before)."""
    from .tasks import purge_published

    label, pk, moment = instance._meta.label, instance.pk, instance.published_at
    transaction.on_commit(lambda: purge_published.apply_async((label, pk), eta=moment), robust=True)


def scheduled(instance) -> bool:
    return instance.status == Status.PUBLISHED and instance.published_at and instance.published_at > timezone.now()


def purge_m2m(sender, instance, action, pk_set=None, **kwargs) -> None:
    """``post.tags.add()`` and the like: the through rows' own signals do not fire."""
    if not enabled() or not action.startswith("post_"):
        return
    if type(instance) in public_changes.PUBLISHABLE and not public_changes.is_public(type(instance), instance):
        return
    if type(instance) in public_changes.PUBLISHABLE:
        keys = affected.keys_for_objects([instance])
        if pk_set and sender is Post.tags.through:  # removed tags: no longer on the post
            keys |= set(map(affected.tag_key, Tag.objects.filter(pk__in=pk_set).values_list("name", flat=True)))
        purge_after_commit(keys)
    elif pk_set and kwargs.get("model") in public_changes.PUBLISHABLE:  # ``author.posts.add(post)``: the posts
        published = kwargs["model"]._base_manager.filter(pk__in=pk_set, status=Status.PUBLISHED)
        if published.exists():
            purge_after_commit(affected.keys_for_objects(published) | set(keys_of([instance])))
    else:  # ``clear()`` from the far side: which rows, nobody says
        purge_after_commit({affected.SITE})


def purge_bulk_write(sender, pks=None, **kwargs) -> None:
    if enabled() and public_changes.any_public(sender, pks):
        purge_after_commit(affected.keys_for_bulk_write(sender, pks))


def connect_signals() -> None:
    for model in public_changes.PUBLISHABLE:
        pre_save.connect(remember_before, sender=model, dispatch_uid=f"edge-before-{model._meta.label}")
    pre_save.connect(remember_tag_name, sender=Tag, dispatch_uid="edge-before-tag")
    for model in public_changes.CONTENT_MODELS:
        post_save.connect(purge_saved, sender=model, dispatch_uid=f"edge-save-{model._meta.label}")
        post_delete.connect(purge_deleted, sender=model, dispatch_uid=f"edge-delete-{model._meta.label}")
    for through in (Post.tags.through, Post.authors.through, Digest.references.through):
        m2m_changed.connect(purge_m2m, sender=through, dispatch_uid=f"edge-m2m-{through._meta.label}")
    content_changed.connect(purge_bulk_write, dispatch_uid="edge-bulk-writes")
