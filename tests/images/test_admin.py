"""The images admin: several files at once, search, the Markdown to copy, the picker, the private original.

Each test runs signed in as an Editor and again as a Publisher (the ``staff`` fixture): the roles that use it."""
import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.urls import reverse

from blog.factories import PostFactory
from digests.factories import DigestFactory
from images.models import Image
from publishing.workflow import Status

from .conftest import jpeg_with_gps, picture_bytes

pytestmark = pytest.mark.django_db


def test_several_images_are_uploaded_at_once_each_with_its_alt_text(staff, django_capture_on_commit_callbacks):
    files = [SimpleUploadedFile("one.png", picture_bytes()), SimpleUploadedFile("two.jpg", picture_bytes("JPEG"))]
    with django_capture_on_commit_callbacks(execute=False):
        response = staff.post(reverse("admin:images_image_upload"), {
            "files": files, "alt": ["The first", "The second"], "caption": "", "credit": "Photo: Ann"})
    assert response.status_code == 302
    assert sorted(Image.objects.values_list("alt", "original_name", "credit", "uploaded_by")) == [
        ("The first", "one.png", "Photo: Ann", staff.user.pk), ("The second", "two.jpg", "Photo: Ann", staff.user.pk)]


def test_adding_an_image_is_the_upload_page(staff):
    response = staff.get(reverse("admin:images_image_add"))
    assert response.status_code == 302 and response["Location"] == reverse("admin:images_image_upload")
    page = staff.get(reverse("admin:images_image_upload")).content.decode()
    assert 'type="file" name="files"' in page and " multiple" in page and 'name="alt"' in page
    assert "images/upload.js" in page


def test_the_list_is_searchable_by_alt_text_caption_and_file_name(staff, upload):
    upload({"kittens.png": picture_bytes(), "harbour.png": picture_bytes(color="red")}, ["Two kittens", "A harbour"])
    url = reverse("admin:images_image_changelist")
    assert "Two kittens" in staff.get(url, {"q": "kittens"}).content.decode()
    assert "Two kittens" not in staff.get(url, {"q": "harbour"}).content.decode()
    assert "A harbour" in staff.get(url, {"q": "harbour.png"}).content.decode()


def test_an_images_page_shows_its_markdown_ready_to_copy_and_the_pages_showing_it(staff, upload):
    image, = upload(alts=["A [bracketed] view"])
    PostFactory(title="Where it shows", body=f"![](image:{image.pk})")
    page = staff.get(reverse("admin:images_image_change", args=[image.pk])).content.decode()
    assert f'value="![A \\[bracketed\\] view](image:{image.pk})"' in page
    assert 'class="button image-copy"' in page and "images/admin.js" in page
    assert "Where it shows" in page
    markdown = staff.get(reverse("admin:images_image_markdown", args=[image.pk]))
    assert markdown.content.decode() == f"![A \\[bracketed\\] view](image:{image.pk})"


def test_the_post_and_digest_forms_have_the_image_picker(staff, upload):
    image, = upload()
    post = PostFactory(status=Status.DRAFT, published_at=None)  # what an Editor may change
    digest = DigestFactory(status=Status.DRAFT, published_at=None)
    for url in (reverse("admin:blog_post_change", args=[post.pk]), reverse("admin:digests_digest_change", args=[digest.pk])):
        page = staff.get(url).content.decode()
        assert 'id="lookup_id_body_image"' in page and 'class="related-lookup"' in page, url
        assert 'data-target="id_body"' in page and "images/picker.js" in page, url
    post_page = staff.get(reverse("admin:blog_post_change", args=[post.pk])).content.decode()
    assert 'name="lead_image"' in post_page
    popup = staff.get(reverse("admin:images_image_changelist"), {"_to_field": "id", "_popup": "1"})
    assert f'data-popup-opener="{image.pk}"' in popup.content.decode()


def test_the_original_is_for_staff_only_and_only_as_a_download(staff, upload, django_user_model):
    image, = upload({"camera.jpg": jpeg_with_gps()})
    url = reverse("admin:images_image_original", args=[image.pk])
    assert Client().get(url).status_code == 302  # to the sign-in page
    nobody = Client()
    nobody.force_login(django_user_model.objects.create_user("nobody", password="pw", is_staff=True))  # no image permission
    assert nobody.get(url).status_code in (403, 404)
    response = staff.get(url)
    assert response.status_code == 200
    assert response["Content-Disposition"].startswith("attachment")
    assert response["Content-Type"] == "application/octet-stream" and "no-store" in response["Cache-Control"]
    assert b"SecretCam" in b"".join(response.streaming_content)  # exactly as uploaded
    assert image.original not in staff.get(reverse("admin:images_image_change", args=[image.pk])).content.decode()
