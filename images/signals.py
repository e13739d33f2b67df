"""What the images app tells the apps above it, and how it keeps its files true.

``image_changed`` is sent when what a page prints of an image changes -- its renditions
became ready, its alt text, caption or credit was edited, or it was deleted (pages that
were not public may have shown it: they print its alt text now) -- so the content apps
re-render the pages that show it (they listen from their own ``AppConfig.ready``: this app
never imports them). Deleting an image removes its files once the deletion commits.
Connected in ``ImagesConfig.ready``.
"""
from django.contrib.contenttypes.models import ContentType
from django.db import transaction
from django.db.models.signals import post_delete, post_save, pre_delete, pre_save
from django.dispatch import Signal

from .models import Image, ImageUse
from .renditions import delete_files

#: ``sender``: Image. ``image``: the Image whose printed form changed. ``pages``: the
#: (content type id, object id) of every page showing it, for ``ids_of``.
image_changed = Signal()


def pages_showing(image: Image) -> list[tuple[int, int]]:
    return list(ImageUse.objects.filter(image=image).values_list("content_type_id", "object_id"))


def ids_of(pages: list[tuple[int, int]], model) -> list[int]:
    """The ids, among `pages`, of `model`'s rows: what a content app re-renders."""
    kind = ContentType.objects.get_for_model(model).pk
    return [object_id for content_type_id, object_id in pages if content_type_id == kind]


def announce(image: Image) -> None:
    image_changed.send(sender=Image, image=image, pages=pages_showing(image))

#: The fields a page's HTML prints (renditions: the <picture> replaces the fallback <img>).
PRINTED = ("alt", "caption", "credit", "renditions")


def _remember_printed(sender, instance, raw=False, **kwargs):
    if not raw and instance.pk:
        instance._printed_before = Image.objects.filter(pk=instance.pk).values_list(*PRINTED).first()


def _announce_if_printed_changed(sender, instance, raw=False, created=False, **kwargs):
    before = getattr(instance, "_printed_before", None)
    if raw or created or before is None or before == tuple(getattr(instance, name) for name in PRINTED):
        return
    announce(instance)


def _remember_pages(sender, instance, **kwargs):
    """Before an image is deleted (with the uses of unpublished pages): note the pages showing it."""
    instance._pages_before = pages_showing(instance)


def _after_deletion(sender, instance, **kwargs):
    """Once the deletion commits: its files go, and the pages that showed it are re-rendered."""
    pages = getattr(instance, "_pages_before", [])

    def finish():
        delete_files(instance)
        if pages:
            image_changed.send(sender=Image, image=instance, pages=pages)

    transaction.on_commit(finish)


def connect() -> None:
    pre_save.connect(_remember_printed, sender=Image, dispatch_uid="images-remember-printed")
    post_save.connect(_announce_if_printed_changed, sender=Image, dispatch_uid="images-announce-changed")
    pre_delete.connect(_remember_pages, sender=Image, dispatch_uid="images-remember-pages")
    post_delete.connect(_after_deletion, sender=Image, dispatch_uid="images-after-deletion")
