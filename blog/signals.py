"""Keeping stored post cards true (blog.cards): the writes Post.save does not see.

A card shows the post's bylines and tags and its authors' and tags' names, so
saving or deleting a byline or tagging row re-renders its post in the same transaction, and a
byline row redraws its og:image card too (which shows the byline, not the tags). Renaming an author
or a tag concerns every post of theirs (thousands): the save records a ``PostRerender`` row and a
worker re-renders them after the commit (``blog.tasks.rerender``, ``publishing.rerenders``). A post's body shows its
images: when one's renditions become ready or its alt text, caption or credit
changes (``images.signals.image_changed``), the posts showing it are re-rendered.
Connected in ``BlogConfig.ready``.
"""
from django.db.models.signals import post_delete, post_save, pre_save
from taggit.models import Tag

from images.signals import ids_of, image_changed
from publishing import rerenders
from publishing.signals import announce_bulk_write

from .cards import draw_social_cards, refresh_cards
from .models import Author, Post, PostAuthor, PostRerender, TaggedPost
from .tasks import rerender

#: What a post's stored parts and og:image show of an author or a tag: a change of anything else re-renders nothing.
SHOWN = {Author: ("name", "handle", "slug"), Tag: ("name", "slug")}


def _post_of_link(sender, instance, origin=None, **kwargs) -> None:
    """A byline or tagging row was saved or deleted: its post's card (and og:image byline) changed.

    Not while the post itself is being deleted (its rows go first): drawing its card then stored a
    new card for a post about to vanish, and the deletion failed on that card's foreign key.
    """
    if isinstance(origin, Post) or getattr(origin, "model", None) is Post:
        return
    refresh_cards(Post.objects.filter(pk=_post_id(instance)))
    if sender is PostAuthor:
        draw_social_cards(Post.objects.filter(pk=_post_id(instance)))


def _post_id(link) -> int:
    return getattr(link, "post_id", None) or link.content_object_id


def _remember_shown(sender, instance, raw=False, **kwargs) -> None:
    """Before an author or tag is saved, note what posts show of it, to re-render them only on a change."""
    if not raw and instance.pk:
        instance._cards_shown_before = sender.objects.filter(pk=instance.pk).values_list(*SHOWN[sender]).first()


def shown_changed(sender, instance) -> bool:
    """After a save of an existing author or tag: whether what posts show of it changed (``outbound``
    asks this too, so each save reads the row once)."""
    before = getattr(instance, "_cards_shown_before", None)
    return before is not None and before != tuple(getattr(instance, name) for name in SHOWN[sender])


def _posts_of_renamed(sender, instance, created=False, raw=False, **kwargs) -> None:
    """A renamed author (their posts' cards and og:image bylines) or tag: a worker re-renders the posts."""
    if raw or created or not shown_changed(sender, instance):
        return
    rerenders.record(PostRerender, "author" if sender is Author else "tag", instance.pk, rerender)


def _posts_showing(sender, image, pages, **kwargs) -> None:
    """Re-render the bodies (and lead images) of the posts showing `image`; caches hear of it."""
    ids = ids_of(pages, Post)
    if ids:
        refresh_cards(Post.objects.filter(pk__in=ids), body=True)
        announce_bulk_write(Post, ids)


def connect() -> None:
    image_changed.connect(_posts_showing, dispatch_uid="blog-image-changed")
    for model in (PostAuthor, TaggedPost):
        post_save.connect(_post_of_link, sender=model, dispatch_uid=f"cards-save-{model._meta.label}")
        post_delete.connect(_post_of_link, sender=model, dispatch_uid=f"cards-delete-{model._meta.label}")
    for model in SHOWN:
        pre_save.connect(_remember_shown, sender=model, dispatch_uid=f"cards-before-{model.__name__}")
        post_save.connect(_posts_of_renamed, sender=model, dispatch_uid=f"cards-{model.__name__}")
