"""Images editors upload, and which pages show each one.

An ``Image`` is the original file as uploaded (private to staff, in the "image_originals"
storage) plus what readers get: renditions re-encoded by Pillow in AVIF, WebP and JPEG or PNG
at a few widths, named by the original's content hash (in the "images" storage), so their URLs
never change and may be cached for a year. Posts and digests cite an image in Markdown as
``![alt](image:ID)``; each save records which images the page shows (``ImageUse``), so
refusing to delete an image a published page shows, and naming those pages, is one query.
"""
from django.conf import settings
from django.contrib.contenttypes.fields import GenericForeignKey
from django.contrib.contenttypes.models import ContentType
from django.db import models
from django.db.models.deletion import CASCADE, ProtectedError

from . import processing

#: Bump to give every rendition a new name after changing how renditions are encoded
#: (processing.QUALITY, WIDTHS): old URLs stay immutable, pages are re-rendered with new ones.
RENDITIONS_VERSION = 1


class Image(models.Model):
    """An uploaded picture: its private original, its description, and its public renditions."""

    original = models.CharField(max_length=200, editable=False, help_text="The file as uploaded, in private storage.")
    original_name = models.CharField(max_length=255, blank=True, editable=False,
                                     help_text="The uploaded file's name (searchable; its type came from its content).")
    alt = models.CharField(
        "alt text", max_length=300,
        help_text="What the image shows, for readers who cannot see it (screen readers, feeds, failed loads). Required.",
    )
    caption = models.CharField(max_length=500, blank=True,
                               help_text="Shown under the image when it stands alone in a paragraph.")
    credit = models.CharField(max_length=200, blank=True, help_text="Who made it, e.g. “Photo: Jane Doe / CC BY 4.0”.")
    width = models.PositiveIntegerField(editable=False, help_text="Pixels, upright (EXIF orientation applied).")
    height = models.PositiveIntegerField(editable=False)
    format = models.CharField(max_length=8, editable=False, help_text="What the content is, as Pillow read it.")
    fallback = models.CharField(max_length=4, editable=False, help_text="jpeg or png: for browsers without AVIF/WebP.")
    content_hash = models.CharField(max_length=64, unique=True, editable=False, help_text="SHA-256 of the original.")
    renditions = models.JSONField(default=list, editable=False,
                                  help_text="[{format, width, height, name}], once the worker has made them.")
    uploaded_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, editable=False,
                                    on_delete=models.SET_NULL, related_name="+")
    uploaded_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-uploaded_at", "-id"]

    def __str__(self) -> str:
        return f"#{self.pk} {self.alt}"

    @property
    def markdown(self) -> str:
        """What an editor types to show this image in a post or digest body."""
        alt = self.alt.replace("\\", "\\\\").replace("[", "\\[").replace("]", "\\]")
        return f"![{alt}](image:{self.pk})"

    @property
    def ready(self) -> bool:
        return bool(self.renditions)

    def rendition_name(self, fmt: str, width: int) -> str:
        return f"{self.content_hash}/v{RENDITIONS_VERSION}-{width}.{processing.EXTENSION[fmt]}"

    @property
    def fallback_name(self) -> str:
        """The widest rendition in the fallback format: stored at upload, so pages can show it at once."""
        return self.rendition_name(self.fallback, processing.widths(self.width)[-1])

    @property
    def display_height(self) -> int:
        """The height of the widest rendition (the width/height pages print: the aspect ratio is what counts)."""
        width = processing.widths(self.width)[-1]
        return max(1, round(self.height * width / self.width))


def refuse_if_published(collector, field, sub_objs, using):
    """``on_delete`` of ``ImageUse.image``: deleting an image a published page shows is refused, naming
    the pages; uses by unpublished pages go with the image (those pages then print its alt text)."""
    shown = [use for use in sub_objs if use.published]
    if shown:
        pages = "; ".join(str(use) for use in shown)
        raise ProtectedError(f"This image is shown by published pages: {pages}. Remove it from them first.", shown)
    CASCADE(collector, field, sub_objs, using)


class ImageUse(models.Model):
    """One page (a post or a digest) showing one image: written when the page is saved.

    The page's title, address and whether it is published are copied here, so the
    delete check and the image's admin page read one table.
    """

    image = models.ForeignKey(Image, related_name="uses", on_delete=refuse_if_published)
    content_type = models.ForeignKey(ContentType, on_delete=models.CASCADE)
    object_id = models.PositiveBigIntegerField()
    page = GenericForeignKey("content_type", "object_id")
    position = models.PositiveSmallIntegerField(default=0, help_text="Order on the page; the lead image is 0.")
    title = models.CharField(max_length=300)
    path = models.CharField(max_length=300)
    published = models.BooleanField(default=False, help_text="Published or scheduled.")

    class Meta:
        ordering = ["position", "id"]
        constraints = [models.UniqueConstraint(fields=["content_type", "object_id", "image"], name="one_use_per_page")]
        indexes = [models.Index(fields=["image", "published"], name="imageuse_image_published")]

    def __str__(self) -> str:
        state = "" if self.published else "unpublished "
        return f"{state}{self.content_type.name} “{self.title}” ({self.path})"


def record_uses(page, image_ids: list[int], *, published: bool) -> None:
    """Store which images `page` shows (ids in page order, repeats allowed), replacing what it showed."""
    kind = ContentType.objects.get_for_model(page)
    found = set(Image.objects.filter(pk__in=image_ids).values_list("pk", flat=True)) if image_ids else set()
    order = [image_id for image_id in dict.fromkeys(image_ids) if image_id in found]
    ImageUse.objects.filter(content_type=kind, object_id=page.pk).exclude(image_id__in=order).delete()
    for position, image_id in enumerate(order):
        ImageUse.objects.update_or_create(
            content_type=kind, object_id=page.pk, image_id=image_id,
            defaults={"position": position, "title": str(page)[:300], "path": page.get_absolute_url()[:300],
                      "published": published},
        )
