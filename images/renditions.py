"""Storing an accepted upload, and making its renditions (what ``images.tasks`` runs).

An upload stores two files at once: the original, as uploaded, in the private
"image_originals" storage, and the widest rendition in the fallback format (JPEG or PNG),
which ``processing.inspect`` already encoded to prove the file re-encodes. Pages can show
the image from then on. The worker then makes the rest -- AVIF, WebP and the fallback at
each width -- and saving the row's ``renditions`` tells the pages showing it to render their
``<picture>`` (``images.signals``).
"""
import logging

from django.core.files.base import ContentFile
from django.core.files.storage import storages
from PIL import Image as PillowImage

from . import processing
from .models import Image

logger = logging.getLogger(__name__)

#: Formats of every width, best first: a browser takes the first ``<source>`` whose type it knows.
MODERN = ("avif", "webp")


def public_storage():
    """Where renditions live (readers load them from its URLs)."""
    return storages["images"]


def private_storage():
    """Where originals live: never linked from a page; staff read them through the admin."""
    return storages["image_originals"]


def put(storage, name: str, data: bytes) -> None:
    """Write `data` under exactly `name` (a content-hash name: an existing file there is the same file)."""
    if storage.exists(name):
        return
    saved = storage.save(name, ContentFile(data))
    if saved != name:  # another worker wrote it meanwhile; keep theirs
        storage.delete(saved)


def new_image(inspected: processing.Inspected, *, name: str, alt: str, caption: str = "", credit: str = "",
              user=None) -> Image:
    """The (unsaved) row of an accepted upload."""
    extension = processing.EXTENSION.get(inspected.format.lower(), inspected.format.lower())
    return Image(original=f"{inspected.content_hash}.{extension}", original_name=name[:255], alt=alt,
                 caption=caption, credit=credit, width=inspected.width, height=inspected.height,
                 format=inspected.format, fallback=inspected.fallback, content_hash=inspected.content_hash,
                 uploaded_by=user)


def store(image: Image, inspected: processing.Inspected) -> None:
    """Write the original and the fallback rendition, then the row. Call it in a transaction and, if that
    fails, ``discard`` the image after the rollback: a failed upload leaves no file behind."""
    put(private_storage(), image.original, inspected.data)
    put(public_storage(), image.fallback_name, inspected.fallback_bytes)
    image.save()


def discard(image: Image) -> None:
    """Remove the files of an image whose row was not written (or was rolled back), unless a row of the
    same content exists after all (the same file uploaded twice at once: its files are the winner's)."""
    if not Image.objects.filter(content_hash=image.content_hash).exists():
        delete_files(image)


def make(image: Image) -> bool:
    """Make and store every rendition of `image` not made yet; False if it had them all already.

    Idempotent: a name that exists holds that rendition already (names carry the content hash
    and RENDITIONS_VERSION), so a task run twice, or one killed halfway, only finishes the work.
    """
    if image.ready:
        return False
    with private_storage().open(image.original, "rb") as original:
        pixels = processing.clean(processing.open_accepted(original.read()))
    made = []
    for width in processing.widths(image.width):
        height = max(1, round(image.height * width / image.width))
        for fmt in (*MODERN, image.fallback):
            name = image.rendition_name(fmt, width)
            if not public_storage().exists(name):
                put(public_storage(), name, processing.encode(pixels, fmt, width))
            made.append({"format": fmt, "width": width, "height": height, "name": name})
    image.renditions = made
    image.save(update_fields=["renditions", "updated_at"])  # images.signals: pages showing it re-render
    return True


def files_of(image: Image) -> list[tuple[object, str]]:
    """Every stored file of `image`, with its storage: what deleting the image removes."""
    names = {item["name"] for item in image.renditions} | {image.fallback_name}
    return [(private_storage(), image.original)] + [(public_storage(), name) for name in sorted(names)]


def delete_files(image: Image) -> None:
    """Remove `image`'s files (after its row was deleted); a file already gone is not an error."""
    for storage, name in files_of(image):
        try:
            storage.delete(name)
        except Exception:  # noqa: BLE001 -- a leftover file is harmless; a failed delete must not undo the row's
            logger.warning("Could not delete %s of image %s", name, image.pk, exc_info=True)


def open_fallback(image: Image):
    """The widest fallback rendition (re-encoded at upload, metadata-free) as a Pillow image: what a
    post's social card draws from its lead image. None if the storage cannot give it: the card is then
    drawn without it rather than the post's save failing."""
    try:
        with public_storage().open(image.fallback_name, "rb") as stored:
            photo = PillowImage.open(stored, formats=["JPEG", "PNG"])
            photo.load()
    except Exception:  # noqa: BLE001 -- storage errors are many (OSError, botocore's); the card can do without
        logger.warning("Could not read %s of image %s for a social card", image.fallback_name, image.pk, exc_info=True)
        return None
    return photo


def url(name: str) -> str:
    return public_storage().url(name)
