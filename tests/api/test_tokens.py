"""API tokens: stored hashed, revocable, scoped, created and revoked in the admin."""
import pytest
from django.contrib.auth.models import Group

from accounts.models import ApiToken, hash_token
from digests.factories import DigestFactory

from .conftest import bearer

pytestmark = pytest.mark.django_db


def test_only_the_digest_of_a_token_is_stored(editor):
    token, raw = ApiToken.issue(editor, "bot", ["write:content"])
    token.refresh_from_db()
    assert raw.startswith("rj_") and len(raw) > 40
    assert token.hashed_token == hash_token(raw) and raw not in (token.hashed_token, token.prefix)
    assert raw.startswith(token.prefix)
    assert ApiToken.objects.authenticate(raw) == token


def test_wrong_secret_with_a_known_prefix_revoked_and_inactive_do_not_authenticate(editor):
    token, raw = ApiToken.issue(editor, "bot", [])
    assert ApiToken.objects.authenticate(raw[:-1] + ("A" if raw[-1] != "A" else "B")) is None
    token.revoke()
    assert ApiToken.objects.authenticate(raw) is None
    other, other_raw = ApiToken.issue(editor, "bot 2", [])
    editor.is_active = False
    editor.save()
    assert ApiToken.objects.authenticate(other_raw) is None


@pytest.mark.parametrize("header", ["Bearer rj_nonsense", "Bearer ", "Basic dXNlcjpwdw==", "Token abc"])
def test_bad_credentials_are_a_401_even_on_public_endpoints(client, header):
    DigestFactory()
    response = client.get("/api/v1/digests/", HTTP_AUTHORIZATION=header)
    assert response.status_code == 401
    assert response["WWW-Authenticate"].startswith("Bearer")
    assert response.json()["detail"]


def test_revoked_token_is_refused(client, editor, make_token):
    raw = make_token(editor, "read:drafts")
    assert client.get("/api/v1/digests/", **bearer(raw)).status_code == 200
    ApiToken.objects.get().revoke()
    assert client.get("/api/v1/digests/", **bearer(raw)).status_code == 401


def test_use_is_recorded(client, editor, make_token):
    raw = make_token(editor)
    assert ApiToken.objects.get().last_used_at is None
    client.get("/api/v1/digests/", **bearer(raw))
    assert ApiToken.objects.get().last_used_at is not None


def test_admin_creates_a_token_and_shows_it_once(admin_client, editor):
    response = admin_client.post(
        "/admin/accounts/apitoken/add/",
        {"user": editor.pk, "name": "ingestion bot", "scopes": ["write:content", "read:drafts"]},
        follow=True,
    )
    assert response.status_code == 200
    token = ApiToken.objects.get()
    shown = [str(m) for m in response.context["messages"] if "Copy it now" in str(m)]
    assert len(shown) == 1
    raw = shown[0].rsplit(" ", 1)[-1]
    assert ApiToken.objects.authenticate(raw) == token
    assert token.scopes == ["read:drafts", "write:content"] and token.user == editor
    again = admin_client.get(f"/admin/accounts/apitoken/{token.pk}/change/")
    assert raw not in again.content.decode()


def test_admin_refuses_the_publish_scope_for_a_non_publisher(admin_client, editor, publisher):
    refused = admin_client.post(
        "/admin/accounts/apitoken/add/", {"user": editor.pk, "name": "x", "scopes": ["publish"]}
    )
    assert refused.status_code == 200 and "Only Publishers" in refused.content.decode()
    assert not ApiToken.objects.exists()
    admin_client.post("/admin/accounts/apitoken/add/", {"user": publisher.pk, "name": "x", "scopes": ["publish"]})
    assert ApiToken.objects.get().scopes == ["publish"]


def test_admin_revokes_tokens(admin_client, editor):
    token, raw = ApiToken.issue(editor, "bot", [])
    admin_client.post(
        "/admin/accounts/apitoken/", {"action": "revoke", "_selected_action": [token.pk]}, follow=True
    )
    token.refresh_from_db()
    assert token.is_revoked and ApiToken.objects.authenticate(raw) is None


def test_publishers_group_is_what_makes_publish_effective(editor):
    assert not editor.has_perm("digests.publish_digest")
    editor.groups.add(Group.objects.get(name="Publishers"))
    editor = type(editor).objects.get(pk=editor.pk)
    assert editor.has_perm("digests.publish_digest")
