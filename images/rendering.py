"""The HTML of a stored image in a page: what ``![alt](image:ID)`` becomes (registered with publishing).

A ready image is a ``<picture>``: an AVIF and a WebP ``<source>`` and a JPEG or PNG ``<img>``,
each with a ``srcset`` over the rendition widths and the column's ``sizes``, so the browser
downloads the smallest file that fills the column at its pixel density. ``width`` and
``height`` are printed so the page reserves the space before the file arrives (no layout
shift); ``decoding="async"`` always, ``loading="lazy"`` for all but the first image of a
page, which is likely above the fold. Until the worker has made the renditions, the image
is the one rendition stored at upload (the widest JPEG/PNG) in a plain ``<img>``; pages are
re-rendered with the ``<picture>`` once it is ready (``images.signals``). Alone in its
paragraph, an image with a caption or credit is a ``<figure>``. Everything printed is escaped
here, then cleaned again by ``publishing.image_refs``' allow-list.
"""
from django.utils.html import format_html, format_html_join
from django.utils.safestring import mark_safe

from publishing.image_refs import ImageRef

from . import processing, renditions
from .models import Image

#: The reader's column (site.css: .post, .digest max-width 44rem): full width below it.
SIZES = "(max-width: 44rem) 100vw, 44rem"


def images_html(refs: list[ImageRef]) -> list[str]:
    """One HTML string per reference (one query for all of them); an unknown id prints its alt text."""
    found = Image.objects.in_bulk({ref.id for ref in refs})
    return [image_html(found.get(ref.id), ref) for ref in refs]


def image_html(image: Image | None, ref: ImageRef) -> str:
    if image is None:
        return format_html("{}", ref.alt)
    shown = picture(image, ref.alt or image.alt, ref.eager)
    if ref.alone and (image.caption or image.credit):
        return format_html('<figure class="image">{}<figcaption>{}</figcaption></figure>', shown, caption(image))
    return shown


def caption(image: Image) -> str:
    credit = format_html(' <span class="credit">{}</span>', image.credit) if image.credit else ""
    return format_html("{}{}", image.caption, credit)


def picture(image: Image, alt: str, eager: bool) -> str:
    """The ``<picture>`` of a ready image, or its fallback ``<img>`` until then."""
    img = {"alt": alt, "width": processing.widths(image.width)[-1], "height": image.display_height}
    lazy = mark_safe("" if eager else ' loading="lazy"')
    if not image.ready:
        return format_html('<img src="{}" alt="{}" width="{}" height="{}"{} decoding="async">',
                           renditions.url(image.fallback_name), img["alt"], img["width"], img["height"], lazy)
    sources = format_html_join("", '<source type="{}" srcset="{}" sizes="{}">',
                               ((processing.MIME[fmt], srcset(image, fmt), SIZES) for fmt in renditions.MODERN))
    return format_html(
        '<picture>{}<img src="{}" srcset="{}" sizes="{}" alt="{}" width="{}" height="{}"{} decoding="async"></picture>',
        sources, renditions.url(middle(image)), srcset(image, image.fallback), SIZES,
        img["alt"], img["width"], img["height"], lazy,
    )


def srcset(image: Image, fmt: str) -> str:
    return ", ".join(f"{renditions.url(item['name'])} {item['width']}w"
                     for item in image.renditions if item["format"] == fmt)


def middle(image: Image) -> str:
    """The fallback ``src`` for browsers without ``srcset``: the middle width, a fair compromise."""
    names = [item["name"] for item in image.renditions if item["format"] == image.fallback]
    return names[len(names) // 2]
