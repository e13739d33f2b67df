"""*Purge from the edge*: a POST with the CSRF token, by a Publisher, records the object's keys."""
import pytest
from django.test import Client
from django.urls import reverse

from edge import affected, outbox
from edge.models import Purge

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def queued(monkeypatch) -> list[int]:
    """The rows handed to the workers (kept, not sent: no edge in these tests)."""
    sent = []
    monkeypatch.setattr(outbox, "queue", sent.append)
    return sent


def purge_url(kind: str, obj) -> str:
    return reverse("editbar:purge", args=[kind, obj.pk])


def test_a_publisher_records_the_purge_of_the_post_and_returns_to_its_page(
        publishing, content, queued, django_capture_on_commit_callbacks):
    page = content.post.get_absolute_url()
    with django_capture_on_commit_callbacks(execute=True):
        response = publishing.post(purge_url("post", content.post), {"next": page})
    assert response.status_code == 302 and response["Location"] == page
    [row] = Purge.objects.all()
    assert set(row.keys) == affected.keys_for_objects([content.post]) and queued == [row.pk]
    assert {f"post-{content.post.pk}", "posts", f"author-{content.author.pk}"} <= set(row.keys)


@pytest.mark.parametrize("kind", ["digest", "author", "topic", "repository"])
def test_every_kind_of_page_object_can_be_purged(publishing, content, kind):
    obj = getattr(content, kind)
    assert publishing.post(purge_url(kind, obj), {"next": obj.get_absolute_url()}).status_code == 302
    assert set(Purge.objects.get().keys) == affected.keys_for_objects([obj])


def test_a_get_purges_nothing(publishing, content):
    assert publishing.get(purge_url("post", content.post)).status_code == 405
    assert not Purge.objects.exists()


def test_an_editor_may_not_purge(editing, content):
    assert editing.post(purge_url("post", content.post), {"next": "/"}).status_code == 403
    assert not Purge.objects.exists()


def test_a_reader_is_sent_to_sign_in(client, member, content):
    for reader in (client, member):
        response = reader.post(purge_url("post", content.post))
        assert response.status_code == 302 and response["Location"].startswith(reverse("admin:login"))
    assert not Purge.objects.exists()


def test_without_the_csrf_token_nothing_is_purged(publisher, content):
    browser = Client(enforce_csrf_checks=True)
    browser.force_login(publisher)
    assert browser.post(purge_url("post", content.post), {"next": "/"}).status_code == 403
    assert not Purge.objects.exists()


@pytest.mark.parametrize("target", ["https://evil.example/", "//evil.example/x", "javascript:alert(1)", ""])
def test_next_must_be_on_this_site(publishing, content, target):
    response = publishing.post(purge_url("post", content.post), {"next": target})
    assert response["Location"] == content.post.get_absolute_url()


@pytest.mark.parametrize("kind, pk", [("reference", 1), ("post", 999999)])
def test_unknown_kinds_and_objects_are_404(publishing, content, kind, pk):
    assert publishing.post(reverse("editbar:purge", args=[kind, pk])).status_code == 404
    assert not Purge.objects.exists()
