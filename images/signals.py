"""What the images app tells the apps above it, and how it keeps its files true.

``image_changed`` is sent when what a page prints of an image changes -- its renditions
became ready, or its alt text, caption or credit was edited -- so the content apps re-render
the pages that show it (they listen from their own ``AppConfig.ready``: this app never
imports them). Deleting an image removes its files once the deletion commits.
Connected in ``ImagesConfig.ready``.
"""
from django.db import transaction
from django.db.models.signals import post_delete, post_save, pre_save
from django.dispatch import Signal

from .models import Image
from .renditions import delete_files

#: ``sender``: Image. ``image``: the Image whose printed form changed.
image_changed = Signal()

#: The fields a page's HTML prints (renditions: the <picture> replaces the fallback <img>).
PRINTED = ("alt", "caption", "credit", "renditions")


def _remember_printed(sender, instance, raw=False, **kwargs):
    if not raw and instance.pk:
        instance._printed_before = Image.objects.filter(pk=instance.pk).values_list(*PRINTED).first()


def _announce_if_printed_changed(sender, instance, raw=False, created=False, **kwargs):
    before = getattr(instance, "_printed_before", None)
    if raw or created or before is None or before == tuple(getattr(instance, name) for name in PRINTED):
        return
    image_changed.send(sender=Image, image=instance)


def _delete_files_on_commit(sender, instance, **kwargs):
    transaction.on_commit(lambda: delete_files(instance))


def connect() -> None:
    pre_save.connect(_remember_printed, sender=Image, dispatch_uid="images-remember-printed")
    post_save.connect(_announce_if_printed_changed, sender=Image, dispatch_uid="images-announce-changed")
    post_delete.connect(_delete_files_on_commit, sender=Image, dispatch_uid="images-delete-files")
