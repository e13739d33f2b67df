"""An image file dropped or pasted into a Markdown field: uploaded through the images app's own form, with its
alt text, answered with its ``![alt](image:ID)``; each refusal of the upload page a precise 4xx saying why."""
import pytest
from django.contrib.auth.models import Permission
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.urls import reverse

from images.models import Image
from tests.images.conftest import stored_files
from tests.images.test_hostile_uploads import SVG, png_declaring

from .conftest import picture_bytes

pytestmark = pytest.mark.django_db

PASTE = "admin:images_image_paste"


def paste(client, content: bytes, name: str = "image.png", alt: str | None = "A chart of build times"):
    data = {"files": SimpleUploadedFile(name, content)}
    if alt is not None:
        data["alt"] = alt
    return client.post(reverse(PASTE), data)


def refused(response, status: int, words: str) -> None:
    assert response.status_code == status, response.content
    assert words in response.json()["error"]
    assert Image.objects.count() == 0


def test_a_pasted_png_is_uploaded_with_its_alt_text_and_its_markdown_returned(staff, image_dirs,
                                                                              django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=False):
        response = paste(staff, picture_bytes(), alt="A chart [of] build times")
    assert response.status_code == 201 and "no-store" in response["Cache-Control"]
    image = Image.objects.get()
    assert response.json() == {"ids": [image.pk], "markdown": f"![A chart \\[of\\] build times](image:{image.pk})"}
    assert (image.alt, image.original_name, image.uploaded_by) == ("A chart [of] build times", "image.png", staff.user)
    assert stored_files(image_dirs)  # the original and the first rendition, as the upload page stores them


def test_an_svg_is_refused_saying_why(staff, image_dirs):
    refused(paste(staff, SVG, "logo.svg"), 422, "SVG can carry script")
    assert stored_files(image_dirs) == []


def test_a_file_that_is_not_an_image_is_refused(staff):
    refused(paste(staff, b"%PDF-1.7 not a picture" * 20, "notes.png"), 422, "is not a JPEG, PNG, GIF, WebP or AVIF")


def test_a_file_over_the_size_limit_is_refused_as_too_large(staff, settings):
    settings.IMAGES_MAX_UPLOAD_BYTES = 5_000  # the upload handler drops it as it arrives
    refused(paste(staff, picture_bytes() + b"\0" * 6_000, "huge.png"), 413, "“huge.png” is larger than")


def test_too_many_pixels_is_refused_as_a_possible_bomb(staff):
    refused(paste(staff, png_declaring(100_000, 100_000), "small.png"), 422, "decompression bomb")


def test_an_image_without_alt_text_is_refused(staff):
    refused(paste(staff, picture_bytes(), alt=None), 400, "Give every image its own alt text")
    refused(paste(staff, picture_bytes(), alt="   "), 400, "alt text")


def test_no_file_is_refused(staff):
    response = staff.post(reverse(PASTE), {"alt": "Nothing"})
    refused(response, 400, "Choose at least one image.")


def test_the_same_file_twice_is_a_conflict_naming_the_first(staff, upload):
    first, = upload({"chart.png": picture_bytes(color="navy")}, ["The first"])
    response = paste(staff, picture_bytes(color="navy"), "again.png")
    assert response.status_code == 409
    assert f"was uploaded before: image #{first.pk}" in response.json()["error"]
    assert Image.objects.count() == 1


def test_only_staff_who_may_upload_images_may_paste_one(client, django_user_model):
    assert paste(Client(), picture_bytes()).status_code == 302  # to sign in
    writer = django_user_model.objects.create_user("writer", password="pw", is_staff=True)
    writer.user_permissions.add(Permission.objects.get(codename="change_post"))
    client.force_login(writer)
    refused(paste(client, picture_bytes()), 403, "may not upload images")
    assert client.get(reverse(PASTE)).status_code == 405
