"""Reading an uploaded file as an image, refusing what is not one, and re-encoding it (Pillow).

Every upload is hostile until proven otherwise. What a file is comes from its content, never
its name: Pillow must identify it as one of FORMATS (only those decoders are tried, so no
upload reaches Ghostscript or an exotic parser), ``verify()`` must pass, and a second, full
decode must succeed. Before any pixel is decoded the declared size is checked against
``IMAGES_MAX_PIXELS`` (a 100-byte PNG may declare 10 gigapixels); Pillow's own
decompression-bomb check stays on behind it. SVG is refused by name (it is XML that can carry
script, and Pillow cannot rasterise it), and so is a file that is also an archive or markup
(a JPEG with a ZIP appended, a GIF whose bytes are also an HTML page): a polyglot that a
browser or an unzip could read as something else. Nothing the uploader wrote is ever served:
every rendition is decoded and encoded again here, turned upright first (EXIF orientation)
and written without EXIF, XMP or comments (GPS positions included); only the colour profile
travels on. The original is kept as uploaded, private to staff.
"""
import hashlib
import io
import warnings
import zipfile
from dataclasses import dataclass

from django.conf import settings
from django.core.exceptions import ValidationError
from PIL import Image, ImageOps, UnidentifiedImageError

#: Pillow formats accepted, and what the refusal message calls them.
FORMATS = ("JPEG", "PNG", "GIF", "WEBP", "AVIF")
FORMAT_NAMES = "JPEG, PNG, GIF, WebP or AVIF"
#: Byte strings that make a file markup as well as an image (lower case; the file is compared lowered).
MARKUP = (b"<script", b"<?php", b"<iframe", b"<html>", b"<html ", b"<!doctype html", b"javascript:")
#: Encoder settings: good enough for photographs and screenshots, fast enough for a worker.
QUALITY = {"jpeg": 82, "webp": 80, "avif": 60}
#: Rendition widths in CSS pixels' worth of image: a 44rem column at 1x, 2x and 3x-ish; narrower
#: originals stop at their own width.
WIDTHS = (480, 960, 1440)
MIME = {"jpeg": "image/jpeg", "png": "image/png", "webp": "image/webp", "avif": "image/avif"}
EXTENSION = {"jpeg": "jpg", "png": "png", "webp": "webp", "avif": "avif"}


class RefusedImage(ValidationError):
    """An upload that is not an image we accept; the message says why, for the uploader."""


@dataclass(frozen=True)
class Inspected:
    """An accepted upload: its bytes, what it is, and its size once turned upright."""

    data: bytes
    format: str  # a Pillow format name, from FORMATS
    width: int
    height: int
    content_hash: str  # SHA-256 of the bytes as uploaded
    fallback: str  # the format browsers without AVIF or WebP get (fallback_format)
    fallback_bytes: bytes  # the widest rendition in that format: proof that the image re-encodes


def fallback_format(pillow_format: str) -> str:
    """PNG for what was lossless (screenshots, diagrams keep sharp edges and transparency), else JPEG."""
    return "png" if pillow_format in ("PNG", "GIF") else "jpeg"


def widths(original_width: int) -> list[int]:
    """The rendition widths of an image this wide: each of WIDTHS below it, and at most its own width."""
    widest = min(original_width, WIDTHS[-1])
    return [width for width in WIDTHS if width < widest] + [widest]


def inspect(data: bytes, name: str = "") -> Inspected:
    """The upload `data` as an ``Inspected``, or ``RefusedImage`` saying what is wrong with it."""
    label = f"“{name}”" if name else "This file"
    if len(data) > settings.IMAGES_MAX_UPLOAD_BYTES:
        raise RefusedImage(f"{label} is {megabytes(len(data))}; images may be at most "
                           f"{megabytes(settings.IMAGES_MAX_UPLOAD_BYTES)}.")
    refuse_svg(data, label)
    image = decode(data, label)
    refuse_polyglots(data, label)
    width, height = upright_size(image)
    fmt = fallback_format(image.format)
    try:
        fallback_bytes = encode(clean(image), fmt, widths(width)[-1])
    except (OSError, ValueError, MemoryError) as error:
        raise RefusedImage(f"{label} could not be re-encoded as {fmt.upper()} ({error}).") from None
    return Inspected(data, image.format, width, height, hashlib.sha256(data).hexdigest(), fmt, fallback_bytes)


def megabytes(size: int) -> str:
    return f"{size / (1024 * 1024):.1f} MB"


def refuse_svg(data: bytes, label: str) -> None:
    """SVG by name, whatever the file is called: the refusal should say why, not just "not an image"."""
    head = data[:1024].lstrip(b"\xef\xbb\xbf \t\r\n").lower()
    if head.startswith((b"<svg", b"<?xml", b"<!doctype svg")) or b"<svg" in head:
        raise RefusedImage(f"{label} is an SVG drawing: SVG can carry script, so it is not accepted. "
                           f"Export it as PNG.")


def refuse_polyglots(data: bytes, label: str) -> None:
    """An image that is also an archive, a PDF or markup (a ZIP appended to a JPEG, a page after a GIF)."""
    lowered = data.lower()
    if zipfile.is_zipfile(io.BytesIO(data)) or b"%pdf-" in lowered[:1024]:
        raise RefusedImage(f"{label} is also an archive or a document (a polyglot file); upload a plain image.")
    if any(marker in lowered for marker in MARKUP):
        raise RefusedImage(f"{label} contains web page markup or script besides its picture (a polyglot file); "
                           f"upload a plain image.")


def decode(data: bytes, label: str) -> Image.Image:
    """The first frame, fully decoded, after the size check and Pillow's ``verify()``."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", Image.DecompressionBombWarning)
        try:
            with Image.open(io.BytesIO(data), formats=FORMATS) as probe:
                check_pixels(probe, label)
                probe.verify()
            image = Image.open(io.BytesIO(data), formats=FORMATS)
            image.load()
        except RefusedImage:
            raise
        except UnidentifiedImageError:
            raise RefusedImage(f"{label} is not a {FORMAT_NAMES} image (whatever its name says).") from None
        except (Image.DecompressionBombError, Image.DecompressionBombWarning):
            raise RefusedImage(bomb_message(label)) from None
        except (OSError, SyntaxError, ValueError, EOFError, MemoryError) as error:
            raise RefusedImage(f"{label} is damaged or truncated and cannot be read ({error}).") from None
    return image


def check_pixels(image: Image.Image, label: str) -> None:
    width, height = image.size
    if width * height > settings.IMAGES_MAX_PIXELS:
        raise RefusedImage(bomb_message(label, width, height))


def bomb_message(label: str, width: int = 0, height: int = 0) -> str:
    size = f" ({width} × {height})" if width else ""
    return (f"{label} declares more than {settings.IMAGES_MAX_PIXELS / 1e6:g} megapixels{size}: "
            f"refused as a possible decompression bomb. Scale it down first.")


def upright_size(image: Image.Image) -> tuple[int, int]:
    """Width and height as readers see them: EXIF orientations 5-8 swap the two."""
    orientation = image.getexif().get(0x0112, 1)
    width, height = image.size
    return (height, width) if orientation in (5, 6, 7, 8) else (width, height)


def open_accepted(data: bytes) -> Image.Image:
    """An image ``inspect`` accepted before (a stored original), decoded under the same rules."""
    return decode(data, "The original")


def clean(image: Image.Image) -> Image.Image:
    """The first frame upright, in RGB or RGBA, carrying no metadata but its colour profile."""
    image.seek(0)
    upright = ImageOps.exif_transpose(image)
    has_alpha = upright.mode in ("RGBA", "LA", "PA") or "transparency" in upright.info
    pixels = upright.convert("RGBA" if has_alpha else "RGB")
    icc = image.info.get("icc_profile")
    pixels.info = {"icc_profile": icc} if icc else {}
    return pixels


def encode(image: Image.Image, fmt: str, width: int) -> bytes:
    """`image` (from ``clean``) at `width` pixels wide in `fmt` (jpeg, png, webp, avif), metadata-free."""
    if width < image.width:
        image = image.resize((width, max(1, round(image.height * width / image.width))), Image.Resampling.LANCZOS)
    if fmt == "jpeg" and image.mode == "RGBA":
        image = image.convert("RGB")
    options = {"quality": QUALITY[fmt]} if fmt in QUALITY else {"optimize": True}
    if fmt == "avif":
        options["speed"] = 8
    if image.info.get("icc_profile"):
        options["icc_profile"] = image.info["icc_profile"]
    out = io.BytesIO()
    image.save(out, format=fmt.upper(), **options)
    return out.getvalue()
