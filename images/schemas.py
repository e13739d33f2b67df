"""API shapes of images, as the content apps' schemas show them (a post's or digest's ``images``)."""
from ninja import Field, Schema

from . import processing, renditions
from .models import Image


class RenditionOut(Schema):
    type: str = Field(..., description="image/avif, image/webp, image/jpeg or image/png.")
    width: int
    height: int
    url: str = Field(..., description="Immutable: the name carries the original's content hash.")


class ImageOut(Schema):
    id: int
    alt: str
    caption: str
    credit: str
    width: int = Field(..., description="The original's width in pixels, upright.")
    height: int
    src: str = Field(..., description="The widest JPEG or PNG rendition: there from the upload on.")
    renditions: list[RenditionOut] = Field(..., description="Every format and width; empty until the worker made them.")

    @staticmethod
    def resolve_src(image: Image) -> str:
        return renditions.url(image.fallback_name)

    @staticmethod
    def resolve_renditions(image: Image) -> list[dict]:
        return [{"type": processing.MIME[item["format"]], "width": item["width"], "height": item["height"],
                 "url": renditions.url(item["name"])} for item in image.renditions]


class ImageIdIn(Schema):
    """An image named by id, as ``ImageOut`` shows it (its other fields are ignored)."""

    id: int = Field(..., ge=1, le=2**53, description="An uploaded image (the admin's Images).")


def shown_images(page) -> list[Image]:
    """The images a post or digest shows, in page order (a post's lead image first): one query."""
    return [use.image for use in page.image_uses.select_related("image")]
