"""Fixtures for writing in the admin: image storages in the test's folder (the images tests' own fixtures),
a client signed in as an Editor and again as a Publisher, and a preview request as writing.js sends it."""
import pytest
from django.urls import reverse

from tests.images.conftest import image_dirs, picture_bytes, upload  # noqa: F401 (fixtures; image_dirs is autouse)


@pytest.fixture(params=["editor", "publisher"])
def staff(request, client):
    """Signed in as an Editor, then (the test again) as a Publisher: the roles that write. ``staff.user``."""
    client.user = request.getfixturevalue(request.param)
    client.force_login(client.user)
    return client


def preview_url(model: str, pk: int | None = None) -> str:
    """``admin:blog_post_preview`` and the like: the change page's (with the item's id) or the add page's."""
    return reverse(f"admin:{model}_preview", args=[pk] if pk is not None else [])


def preview(client, url: str, field: str, text: str, **form):
    """POST one field's text (and whatever else the form holds) as writing.js does."""
    return client.post(url, {**form, "field": field, field: text})
