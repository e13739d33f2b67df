"""Fixtures for the images tests: storages in the test's own folder, image bytes made here, uploads."""
import io
from pathlib import Path

import pytest
from django.http import QueryDict
from django.utils.datastructures import MultiValueDict
from PIL import Image as Pillow

FILESYSTEM = "django.core.files.storage.FileSystemStorage"


def store_images_in(settings, renditions: Path, originals: Path) -> dict[str, Path]:
    """Point the image storages (on disk: the default) at these folders, for one test."""
    settings.MEDIA_ROOT = renditions
    settings.STORAGES = {
        **settings.STORAGES,
        "images": {"BACKEND": FILESYSTEM, "OPTIONS": {"location": renditions, "base_url": "/media/"}},
        "image_originals": {"BACKEND": FILESYSTEM, "OPTIONS": {"location": originals}},
    }
    return {"renditions": renditions, "originals": originals}


@pytest.fixture(autouse=True)
def image_dirs(settings, tmp_path) -> dict[str, Path]:
    """Renditions and originals in this test's folder."""
    return store_images_in(settings, tmp_path / "renditions", tmp_path / "originals")


def stored_files(dirs: dict[str, Path]) -> list[str]:
    return sorted(str(path.relative_to(root)) for root in dirs.values() if root.exists()
                  for path in root.rglob("*") if path.is_file())


def picture_bytes(fmt: str = "PNG", size=(1600, 900), color="teal", **save) -> bytes:
    """A real image made with Pillow (a two-tone picture, so resizing has something to do)."""
    mode = "RGBA" if fmt == "PNG" and save.pop("alpha", False) else "RGB"
    image = Pillow.new(mode, size, color)
    image.paste("orange", (0, 0, size[0] // 2, size[1] // 3))
    out = io.BytesIO()
    image.save(out, format=fmt, **save)
    return out.getvalue()


def jpeg_with_gps(size=(1200, 800), orientation: int = 6) -> bytes:
    """A JPEG carrying a GPS position, a camera model and an orientation (6: turn 90° clockwise)."""
    image = Pillow.new("RGB", size, "navy")
    image.paste("yellow", (0, 0, size[0] // 4, size[1]))
    exif = Pillow.Exif()
    exif[0x0110] = "SecretCam 3000"  # Model
    exif[0x0112] = orientation
    exif[0x8825] = {1: "N", 2: (48.0, 51.0, 29.0), 3: "E", 4: (2.0, 17.0, 40.0)}  # GPSInfo
    out = io.BytesIO()
    image.save(out, format="JPEG", exif=exif.tobytes())
    return out.getvalue()


def upload_form(files: dict[str, bytes], alts: list[str], **fields):
    """The admin's upload form bound to these files (name -> bytes) and alt texts, as a request binds it."""
    from django.core.files.uploadedfile import SimpleUploadedFile

    from images.uploads import UploadForm

    data = QueryDict(mutable=True)
    data.setlist("alt", alts)
    for name, value in fields.items():
        data[name] = value
    uploads = MultiValueDict({"files": [SimpleUploadedFile(name, content) for name, content in files.items()]})
    return UploadForm(data, uploads)


@pytest.fixture
def upload(django_capture_on_commit_callbacks):
    """Upload images as the admin form does; with `ready`, make their renditions as the task would
    (the domain code, called directly: no broker needed, on SQLite or with REDIS_URL set)."""
    from images import renditions

    def make(files: dict[str, bytes] | None = None, alts: list[str] | None = None, *, ready: bool = True, **fields):
        files = files or {"picture.png": picture_bytes()}
        form = upload_form(files, alts or [f"Alt of {name}" for name in files], **fields)
        assert form.is_valid(), form.errors
        with django_capture_on_commit_callbacks(execute=False):
            images = form.save(user=None)
        for image in images:
            if ready:
                renditions.make(image)
            image.refresh_from_db()
        return images

    return make


@pytest.fixture(params=["editor", "publisher"])
def staff(request, client):
    """A client signed in as an Editor, then (the test again) as a Publisher: both roles upload and place
    images (images/migrations/0002_editorial_permissions.py). ``staff.user`` is who signed in."""
    client.user = request.getfixturevalue(request.param)
    client.force_login(client.user)
    return client


@pytest.fixture
def editing(client, editor):
    """A client signed in as an Editor, the role with the fewest rights that uploads."""
    client.force_login(editor)
    return client


@pytest.fixture
def publishing(client, publisher):
    """A client signed in as a Publisher, the role that may also delete images."""
    client.force_login(publisher)
    return client
