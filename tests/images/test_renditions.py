"""Renditions: re-encoded by Pillow, upright, without EXIF (GPS included), named by content hash, served immutable."""
import io

import pytest
from django.core.files.storage import storages
from PIL import Image as Pillow

from images import renditions, tasks
from images.models import Image

from .conftest import jpeg_with_gps, picture_bytes, stored_files

pytestmark = pytest.mark.django_db


def opened(name: str) -> Pillow.Image:
    with storages["images"].open(name, "rb") as stored:
        image = Pillow.open(io.BytesIO(stored.read()))
        image.load()
    return image


def test_an_upload_stores_the_original_and_one_fallback_then_the_task_makes_every_rendition(upload, image_dirs):
    image, = upload({"photo.jpg": picture_bytes("JPEG", size=(2000, 1000))}, ready=False)
    assert not image.ready
    assert stored_files(image_dirs) == sorted([f"{image.content_hash}.jpg", image.fallback_name])
    assert renditions.make(image) is True
    image.refresh_from_db()
    assert [(item["format"], item["width"], item["height"]) for item in image.renditions] == [
        (fmt, width, width // 2) for width in (480, 960, 1440) for fmt in ("avif", "webp", "jpeg")]
    for item in image.renditions:
        assert item["name"].startswith(f"{image.content_hash}/v1-{item['width']}.")
        rendition = opened(item["name"])
        assert rendition.format == item["format"].upper() and rendition.size == (item["width"], item["height"])
    assert renditions.make(image) is False  # idempotent: a second run has nothing to do


def test_renditions_are_upright_and_carry_no_exif_and_no_gps(upload):
    image, = upload({"camera.jpg": jpeg_with_gps(size=(1200, 800), orientation=6)})
    assert (image.width, image.height) == (800, 1200)  # turned: orientation 6 is a quarter turn
    for item in image.renditions:
        with storages["images"].open(item["name"], "rb") as stored:
            data = stored.read()
        rendition = Pillow.open(io.BytesIO(data))
        assert rendition.width < rendition.height
        assert dict(rendition.getexif()) == {}
        assert b"SecretCam" not in data and b"Exif" not in data
    with storages["image_originals"].open(image.original, "rb") as original:
        assert b"SecretCam" in original.read()  # the original is kept as uploaded (private)


def test_a_narrow_image_is_not_enlarged(upload):
    image, = upload({"icon.png": picture_bytes("PNG", size=(300, 200), alpha=True)})
    assert {(item["format"], item["width"]) for item in image.renditions} == {("avif", 300), ("webp", 300), ("png", 300)}
    assert opened(image.fallback_name).mode == "RGBA"  # transparency kept in the PNG fallback


def test_uploads_queue_the_renditions_task_after_the_commit_with_an_id_the_sweep_knows(
        monkeypatch, django_capture_on_commit_callbacks):
    from .conftest import upload_form

    sent = []
    monkeypatch.setattr(tasks.make_renditions, "apply_async", lambda args, **options: sent.append((args, options)))
    form = upload_form({"a.png": picture_bytes()}, ["A"])
    assert form.is_valid(), form.errors
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        image, = form.save(user=None)
    assert sent == []  # nothing before the commit
    for callback in callbacks:
        callback()
    assert [args for args, _ in sent] == [(image.pk,)]
    assert sent[0][1]["task_id"].startswith(f"{tasks.RENDITIONS_WORK}:{image.pk}:")


def test_the_task_makes_the_renditions(upload):
    image, = upload(ready=False)
    assert tasks.make_renditions.run(image.pk) is True
    assert Image.objects.get(pk=image.pk).ready
    assert tasks.make_renditions.run(10**9) is False  # deleted meanwhile: nothing to do


def test_the_sweep_queues_again_only_images_left_without_renditions(upload, monkeypatch, settings):
    settings.IMAGES_SWEEP_AFTER = 0
    waiting, = upload({"waiting.png": picture_bytes(color="red")}, ready=False)
    upload({"done.png": picture_bytes(color="blue")})
    sent = []
    monkeypatch.setattr(tasks, "queue_renditions", sent.append)
    assert tasks.sweep_renditions.run() == 1
    assert sent == [waiting.pk]


def test_deleting_an_image_removes_its_files_after_the_commit(upload, image_dirs, django_capture_on_commit_callbacks):
    image, = upload()
    assert len(stored_files(image_dirs)) == 10  # the original and nine renditions
    with django_capture_on_commit_callbacks(execute=True):
        image.delete()
    assert stored_files(image_dirs) == []


def test_a_rendition_is_served_from_disk_as_immutable_with_its_type(client, upload):
    image, = upload()
    item = next(item for item in image.renditions if item["format"] == "avif")
    response = client.get(renditions.url(item["name"]))
    assert response.status_code == 200
    assert response["Content-Type"] == "image/avif"
    assert response["Cache-Control"] == "public, max-age=31536000, immutable"  # kept through the edge middleware
    assert response["Surrogate-Key"] == "site"
    assert b"".join(response.streaming_content)[4:12] == b"ftypavif"
    again = client.get(renditions.url(item["name"]), HTTP_IF_NONE_MATCH=response["ETag"])
    assert again.status_code == 304


@pytest.mark.parametrize("path", ["/media/../originals/x.png", "/media/abc.png", "/media/{hash}.png"])
def test_nothing_but_renditions_is_served_from_media(client, upload, path):
    image, = upload()
    response = client.get(path.format(hash=image.content_hash))
    assert response.status_code == 404


def test_refresh_images_re_renders_the_pages_showing_images_with_the_current_urls(upload, settings):
    from django.core.management import call_command

    from blog.factories import PostFactory
    from blog.models import Post

    image, = upload()
    post = PostFactory(body=f"![](image:{image.pk})")
    settings.STORAGES = {**settings.STORAGES, "images": {**settings.STORAGES["images"], "OPTIONS": {
        **settings.STORAGES["images"]["OPTIONS"], "base_url": "https://images.example/"}}}
    assert "https://images.example/" not in Post.objects.get(pk=post.pk).body_html
    call_command("refresh_images", verbosity=0)
    assert "https://images.example/" in Post.objects.get(pk=post.pk).body_html
