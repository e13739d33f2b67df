"""Pages showing images are valid HTML (the Nu HTML Checker), before and after the renditions are made."""
import json

import pytest

from blog.factories import PostFactory
from digests.factories import DigestFactory
from tests.site.conftest import java_path  # noqa: F401 (a fixture)
from tests.site.test_html_validation import validate

from .conftest import picture_bytes

pytestmark = pytest.mark.django_db


def test_pages_with_images_have_no_html_errors(client, upload, java_path, tmp_path, settings):  # noqa: F811
    settings.PAGE_CACHE_ENABLED = False
    waiting, = upload({"waiting.png": picture_bytes(color="red")}, ["Not ready yet"], ready=False)
    lead, figure = upload({"lead.jpg": picture_bytes("JPEG"), "figure.png": picture_bytes(color="blue")},
                          ["The lead", "A figure"], caption="A caption", credit="Photo: Ann")
    body = (f"Inline ![x](image:{lead.pk}) in a sentence.\n\n![](image:{figure.pk})\n\n"
            f"[![linked](image:{figure.pk})](https://example.com)\n\n![](image:{waiting.pk})\n\n![](image:999999)")
    pages = {"post": PostFactory(body=body, lead_image=lead).get_absolute_url(),
             "digest": DigestFactory(body=body).get_absolute_url()}
    files = []
    for name, url in pages.items():
        page = client.get(url).content.decode()
        assert "<picture>" in page and "<figure" in page and 'alt="Not ready yet"' in page
        files.append(tmp_path / f"{name}.html")
        files[-1].write_text(page)
    errors = [message for message in validate(java_path, files) if message["type"] == "error"]
    assert errors == [], json.dumps(errors, indent=1)[:3000]
