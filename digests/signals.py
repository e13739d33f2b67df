"""Keeping the rendered parts true (digests.cards).

Every write of something a digest's card or page shows re-renders the digests
showing it, in the same transaction; a renamed topic or repository, shown by thousands,
is left to a worker. Connected in ``DigestsConfig.ready``.
"""
from django.db.models.signals import post_delete, post_save, pre_save

from images.signals import ids_of, image_changed
from publishing import rerenders
from publishing.signals import announce_bulk_write

from .models import ActionItem, Digest, DigestReference, DigestRerender, FAQEntry, Reference, Repository, Topic
from .tasks import rerender


def _refresh_digest(sender, instance, raw=False, origin=None, **kwargs):
    """A citation, action item or FAQ entry changed: its digest's page shows it.

    Not while the digest itself is being deleted (its children go first): rendering
    it then would re-create repository links the deletion has already collected.
    """
    deleting_digests = isinstance(origin, Digest) or getattr(origin, "model", None) is Digest
    if not raw and not deleting_digests:
        Digest.objects.filter(pk=instance.digest_id).refresh_rendered()


def _refresh_saved_digest(sender, instance, raw=False, **kwargs):
    if not raw:
        Digest.objects.filter(pk=instance.pk).refresh_rendered()
        instance.draw_social_card()


def _refresh_citing_digests(sender, instance, raw=False, created=False, **kwargs):
    """A reference's title, URL, kind or repository shows in every digest citing it (one indexed query)."""
    if not raw and not created:
        Digest.objects.filter(digest_references__reference=instance).refresh_rendered()


def _remember_shown(sender, instance, raw=False, **kwargs):
    """Before a topic or repository is saved, note the values digests show, to re-render only on a change."""
    if not raw and instance.pk:
        instance._shown_before = sender.objects.filter(pk=instance.pk).values_list(*SHOWN[sender]).first()


def shown_changed(sender, instance) -> bool:
    """After a save of an existing topic or repository: whether what digests show of it changed
    (``outbound`` asks this too, so each save reads the row once)."""
    before = getattr(instance, "_shown_before", None)
    return before is not None and before != tuple(getattr(instance, name) for name in SHOWN[sender])


def _refresh_if_shown_changed(sender, instance, raw=False, created=False, **kwargs):
    """A renamed topic or repository: its digests (hundreds, thousands; not for a description edit) are
    re-rendered by a worker after the commit (``digests.tasks.rerender``, ``publishing.rerenders``)."""
    if raw or created or not shown_changed(sender, instance):
        return
    rerenders.record(DigestRerender, "topic" if sender is Topic else "repository", instance.pk, rerender)


SHOWN = {Topic: ("name", "slug"), Repository: ("full_name",)}


def _digests_showing(sender, image, pages, **kwargs):
    """An image's renditions became ready, its alt text, caption or credit changed, or it was deleted:
    re-render the bodies showing it (``bulk_update``: ``updated_at`` stays; caches hear of it)."""
    digests = list(Digest.objects.filter(pk__in=ids_of(pages, Digest)).only("pk", "body"))
    for digest in digests:
        digest.render_body()
    if digests:
        Digest.objects.bulk_update(digests, ["body_html"])
        announce_bulk_write(Digest, [digest.pk for digest in digests])


def connect() -> None:
    image_changed.connect(_digests_showing, dispatch_uid="digests-image-changed")
    for model in (DigestReference, ActionItem, FAQEntry):
        post_save.connect(_refresh_digest, sender=model, dispatch_uid=f"cards-save-{model.__name__}")
        post_delete.connect(_refresh_digest, sender=model, dispatch_uid=f"cards-delete-{model.__name__}")
    post_save.connect(_refresh_saved_digest, sender=Digest, dispatch_uid="cards-save-Digest")
    post_save.connect(_refresh_citing_digests, sender=Reference, dispatch_uid="cards-save-Reference")
    for model in SHOWN:
        pre_save.connect(_remember_shown, sender=model, dispatch_uid=f"cards-before-{model.__name__}")
        post_save.connect(_refresh_if_shown_changed, sender=model, dispatch_uid=f"cards-{model.__name__}")
