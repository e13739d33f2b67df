"""Uploads are hostile until proven otherwise: a corpus of bad files, each refused with its reason, nothing stored.

Every file is made here (no vendored samples): a polyglot JPEG+ZIP and GIF+HTML, a truncated PNG,
a decompression bomb (a 100-byte PNG declaring 10 gigapixels), SVG with a script (under its own
name and a .png name), an HTML page named .png, and a file over the size limit. Each goes through
the admin's upload page, sent by an Editor (the role with the fewest rights that uploads).
"""
import io
import struct
import zipfile
import zlib

import pytest
from django.urls import reverse

from images.models import Image

from .conftest import picture_bytes, stored_files

pytestmark = pytest.mark.django_db


def jpeg_plus_zip() -> bytes:
    archive = io.BytesIO()
    with zipfile.ZipFile(archive, "w") as bundle:
        bundle.writestr("payload.html", "<b>hello</b>")
    return picture_bytes("JPEG") + archive.getvalue()


def gif_plus_html() -> bytes:
    return picture_bytes("GIF", size=(40, 40)) + b"<html><body><script>alert(document.cookie)</script></body></html>"


def truncated_png() -> bytes:
    whole = picture_bytes("PNG", size=(800, 600))
    return whole[: len(whole) // 2]


def png_declaring(width: int, height: int) -> bytes:
    """A tiny valid PNG whose header claims `width` x `height` pixels (the CRC fixed to match)."""
    data = bytearray(picture_bytes("PNG", size=(1, 1)))
    ihdr = data.index(b"IHDR")
    data[ihdr + 4: ihdr + 12] = struct.pack(">II", width, height)
    crc = zlib.crc32(bytes(data[ihdr: ihdr + 17]))
    data[ihdr + 17: ihdr + 21] = struct.pack(">I", crc)
    return bytes(data)


SVG = b'<?xml version="1.0"?>\n<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script><rect/></svg>'
HTML = b"<!doctype html><html><head><title>x</title></head><body><script>alert(1)</script></body></html>"

CORPUS = [
    ("polyglot-jpeg-zip", "holiday.jpg", jpeg_plus_zip, "polyglot"),
    ("polyglot-gif-html", "animation.gif", gif_plus_html, "polyglot"),
    ("truncated", "screenshot.png", truncated_png, "damaged or truncated"),
    ("bomb", "small.png", lambda: png_declaring(100_000, 100_000), "decompression bomb"),
    ("svg-with-script", "logo.svg", lambda: SVG, "SVG"),
    ("svg-named-png", "logo.png", lambda: SVG, "SVG"),
    ("html-named-png", "photo.png", lambda: HTML, "is not a JPEG, PNG, GIF, WebP or AVIF image"),
    ("not-an-image", "notes.jpg", lambda: b"just some text, no picture here" * 10, "is not a JPEG, PNG"),
]


def post_upload(client, files: dict[str, bytes], alts: list[str]):
    from django.core.files.uploadedfile import SimpleUploadedFile

    payload = {"files": [SimpleUploadedFile(name, content) for name, content in files.items()], "alt": alts,
               "caption": "", "credit": ""}
    return client.post(reverse("admin:images_image_upload"), payload)


@pytest.mark.parametrize("label, name, make, reason", CORPUS, ids=[case[0] for case in CORPUS])
def test_each_bad_file_is_refused_with_its_reason_and_nothing_is_stored(editing, image_dirs, label, name, make,
                                                                         reason):
    response = post_upload(editing, {name: make()}, ["An image"])
    assert response.status_code == 200  # the form again, with the error
    assert reason in response.content.decode()
    assert f"“{name}”" in response.content.decode()  # the editor learns which file
    assert Image.objects.count() == 0
    assert stored_files(image_dirs) == []


def test_a_file_over_the_size_limit_is_dropped_as_it_arrives_and_refused(editing, image_dirs, settings):
    too_big = picture_bytes("PNG") + b"\0" * (settings.IMAGES_MAX_UPLOAD_BYTES + 1)
    response = post_upload(editing, {"huge.png": too_big}, ["A huge image"])
    assert response.status_code == 200
    assert "“huge.png” is larger than 20.0 MB" in response.content.decode()
    assert Image.objects.count() == 0
    assert stored_files(image_dirs) == []


def test_the_size_limit_is_checked_again_on_the_bytes(settings):
    """Images entering by any other path (not through the upload handler) meet the same limit."""
    from images.processing import RefusedImage, inspect

    settings.IMAGES_MAX_UPLOAD_BYTES = 1000
    with pytest.raises(RefusedImage, match="at most"):
        inspect(picture_bytes("PNG", size=(300, 300)) + b"\0" * 2000, "big.png")


def test_one_bad_file_in_a_batch_stores_none_of_them(editing, image_dirs):
    response = post_upload(editing, {"good.png": picture_bytes(), "bad.png": HTML}, ["Good", "Bad"])
    assert "“bad.png” is not a JPEG" in response.content.decode()
    assert Image.objects.count() == 0
    assert stored_files(image_dirs) == []


def test_a_png_named_jpg_is_accepted_as_what_it_is(editing, image_dirs):
    response = post_upload(editing, {"diagram.jpg": picture_bytes("PNG")}, ["A diagram"])
    assert response.status_code == 302
    image = Image.objects.get()
    assert (image.format, image.fallback) == ("PNG", "png")
    assert image.original.endswith(".png") and image.fallback_name.endswith(".png")


def test_a_declared_size_just_over_the_limit_is_refused_before_decoding(settings):
    from images.processing import RefusedImage, inspect

    settings.IMAGES_MAX_PIXELS = 50_000_000
    with pytest.raises(RefusedImage, match=r"50 megapixels \(10000 × 5001\)"):
        inspect(png_declaring(10_000, 5_001), "wide.png")


def test_every_file_needs_its_own_alt_text(editing, image_dirs):
    response = post_upload(editing, {"a.png": picture_bytes(), "b.png": picture_bytes(color="red")}, ["Only one"])
    assert "Give every image its own alt text: 2 file(s), 1 alt text(s)." in response.content.decode()
    assert Image.objects.count() == 0 and stored_files(image_dirs) == []


def test_the_same_file_twice_is_refused_naming_the_first(editing, upload):
    first, = upload({"a.png": picture_bytes()})
    response = post_upload(editing, {"again.png": picture_bytes()}, ["Again"])
    assert f"“again.png” was uploaded before: image {first}" in response.content.decode()
    assert Image.objects.count() == 1
