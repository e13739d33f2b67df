"""Keeping stored post cards true (blog.cards): the writes Post.save does not see.

A card shows the post's bylines and tags and its authors' and tags' names, so
saving or deleting a byline or tagging row, or renaming an author or a tag,
re-renders the posts concerned, in the same transaction; a byline row or an author's new name
redraws their og:image cards too (which show the byline, not the tags). A post's body shows its
images: when one's renditions become ready or its alt text, caption or credit
changes (``images.signals.image_changed``), the posts showing it are re-rendered.
Connected in ``BlogConfig.ready``.
"""
from django.db.models.signals import post_delete, post_save
from taggit.models import Tag

from images.signals import ids_of, image_changed
from publishing.signals import announce_bulk_write

from .cards import refresh_cards
from .models import Author, Post, PostAuthor, TaggedPost


def _post_of_link(sender, instance, origin=None, **kwargs) -> None:
    """A byline or tagging row was saved or deleted: its post's card (and og:image byline) changed.

    Not while the post itself is being deleted (its rows go first): drawing its card then stored a
    new card for a post about to vanish, and the deletion failed on that card's foreign key.
    """
    if isinstance(origin, Post) or getattr(origin, "model", None) is Post:
        return
    refresh_cards(Post.objects.filter(pk=_post_id(instance)))
    if sender is PostAuthor:
        _draw_social_cards(Post.objects.filter(pk=_post_id(instance)))


def _draw_social_cards(posts) -> None:
    """Redraw the og:image cards of `posts` whose byline changed (``refresh_cards`` stored it first)."""
    for post in posts.only("title", "published_at", "authors_tags", "social_card", "slug", "lead_image"):
        post.draw_social_card()


def _post_id(link) -> int:
    return getattr(link, "post_id", None) or link.content_object_id


def _posts_of_author(sender, instance, created=False, **kwargs) -> None:
    """A renamed author: their posts' listing cards and og:image cards (the byline) show the new name."""
    if not created:
        refresh_cards(instance.posts.all())
        _draw_social_cards(instance.posts.all())


def _posts_of_tag(sender, instance, created=False, **kwargs) -> None:
    if not created:
        refresh_cards(Post.objects.filter(tagged_items__tag=instance))


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
    post_save.connect(_posts_of_author, sender=Author, dispatch_uid="cards-author")
    post_save.connect(_posts_of_tag, sender=Tag, dispatch_uid="cards-tag")
