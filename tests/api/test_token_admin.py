"""Staff create, see once and revoke their own API tokens in the admin, scopes capped by role (issue 19).

Superusers keep managing everyone's tokens. Everything goes through the admin as a browser would.
"""
import pytest
from django.contrib.admin.helpers import ACTION_CHECKBOX_NAME
from django.contrib.admin.widgets import AutocompleteSelect

from accounts.models import ApiToken

pytestmark = pytest.mark.django_db

LIST, ADD = "/admin/accounts/apitoken/", "/admin/accounts/apitoken/add/"


def shown_secret(response) -> str:
    shown = [str(m) for m in response.context["messages"] if "Copy it now" in str(m)]
    assert len(shown) == 1
    return shown[0].rsplit(" ", 1)[-1]


def offered_scopes(response) -> set[str]:
    return {value for value, _ in response.context["adminform"].form.fields["scopes"].choices}


def test_an_editor_creates_a_token_for_themselves_and_sees_it_once(client, editor):
    client.force_login(editor)
    page = client.get(ADD)
    assert page.status_code == 200
    assert "user" not in page.context["adminform"].form.fields  # always their own
    assert offered_scopes(page) == {"read:drafts", "write:content"}
    response = client.post(ADD, {"name": "my script", "scopes": ["read:drafts", "write:content"]}, follow=True)
    token = ApiToken.objects.get()
    assert token.user == editor and token.scopes == ["read:drafts", "write:content"]
    raw = shown_secret(response)
    assert ApiToken.objects.authenticate(raw) == token
    assert raw not in client.get(f"{LIST}{token.pk}/change/").content.decode()
    assert raw not in client.get(LIST).content.decode()


def test_an_editors_scopes_are_capped_by_their_role(client, editor):
    client.force_login(editor)
    refused = client.post(ADD, {"name": "x", "scopes": ["publish"]})
    assert refused.status_code == 200 and not ApiToken.objects.exists()


def test_a_publisher_may_take_the_publish_scope(client, publisher):
    client.force_login(publisher)
    assert offered_scopes(client.get(ADD)) == {"read:drafts", "write:content", "publish"}
    client.post(ADD, {"name": "release bot", "scopes": ["publish"]})
    assert ApiToken.objects.get(user=publisher).scopes == ["publish"]


def test_staff_see_and_revoke_only_their_own_tokens(client, editor, publisher):
    mine, mine_raw = ApiToken.issue(editor, "mine", [])
    theirs, theirs_raw = ApiToken.issue(publisher, "theirs", [])
    client.force_login(editor)
    listing = client.get(LIST)
    assert [token.pk for token in listing.context["cl"].result_list] == [mine.pk]
    assert client.get(f"{LIST}{theirs.pk}/change/").status_code in (302, 403, 404)
    client.post(LIST, {"action": "revoke", ACTION_CHECKBOX_NAME: [mine.pk, theirs.pk]}, follow=True)
    mine.refresh_from_db(), theirs.refresh_from_db()
    assert mine.is_revoked and ApiToken.objects.authenticate(mine_raw) is None
    assert not theirs.is_revoked and ApiToken.objects.authenticate(theirs_raw) == theirs


def test_staff_without_an_editorial_role_get_no_scopes(client, django_user_model):
    staff = django_user_model.objects.create_user("helper", password="pw", is_staff=True)
    client.force_login(staff)
    assert offered_scopes(client.get(ADD)) == set()
    client.post(ADD, {"name": "public reads", "scopes": ["read:drafts"]})
    assert not ApiToken.objects.exists()
    client.post(ADD, {"name": "public reads"})
    assert ApiToken.objects.get().scopes == []


def test_superusers_manage_everyones_tokens_with_a_user_picker(admin_client, editor):
    page = admin_client.get(ADD)
    assert isinstance(page.context["adminform"].form.fields["user"].widget.widget, AutocompleteSelect)
    admin_client.post(ADD, {"user": editor.pk, "name": "for the editor", "scopes": ["read:drafts"]})
    theirs = ApiToken.objects.get(user=editor)
    assert [token.pk for token in admin_client.get(LIST).context["cl"].result_list] == [theirs.pk]
    refused = admin_client.post(ADD, {"user": editor.pk, "name": "x", "scopes": ["publish"]})
    assert refused.status_code == 200 and "Only Publishers" in refused.content.decode()
