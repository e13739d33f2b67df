"""The presence and autosave endpoints and the change form's panel (issue 37): on every admin with
edit conflicts, for staff who may change the item only; bad input a precise 4xx; CSRF on; a session
that ended applies nothing, and the text typed meanwhile is saved once the editor signs in again."""
import json

import pytest
from django.contrib import admin
from django.contrib.sessions.models import Session
from django.test import Client

from blog.factories import AuthorFactory, PostFactory
from blog.models import Post
from digests.factories import DigestFactory, RepositoryFactory, TopicFactory
from editing.admin import EditingAdmin
from editing.models import Autosave
from images.models import Image
from publishing.workflow import Status

from .conftest import signed_in, url_of

pytestmark = pytest.mark.django_db

ITEMS = {
    "blog.post": lambda: PostFactory(status=Status.DRAFT, published_at=None),
    "digests.digest": lambda: DigestFactory(status=Status.DRAFT, published_at=None),
    "blog.author": AuthorFactory,
    "digests.topic": TopicFactory,
    "digests.repository": RepositoryFactory,
    "images.image": lambda: Image.objects.create(original="originals/x.png", alt="A cat", width=10, height=10,
                                                 format="PNG", fallback="png", content_hash="0" * 64),
}


def test_every_admin_with_edit_conflicts_has_presence_and_autosave():
    with_editing = {model._meta.label_lower for model, model_admin in admin.site._registry.items()
                    if isinstance(model_admin, EditingAdmin)}
    assert with_editing == set(ITEMS)


@pytest.mark.parametrize("label", ITEMS)
@pytest.mark.parametrize("role", ["editor", "publisher"])
def test_each_change_form_shows_the_panel_and_its_endpoints_answer(request, label, role, shared_cache):
    """Where the role may change the item (Editors only view topics and repositories: no panel, 403s)."""
    item, user = ITEMS[label](), request.getfixturevalue(role)
    client = signed_in(user)
    page = client.get(url_of(item, "change"))
    html = page.content.decode()
    assert page.status_code == 200
    may_change = user.has_perm(f"{item._meta.app_label}.change_{item._meta.model_name}")
    assert may_change == (role == "publisher" or label not in ("digests.topic", "digests.repository"))
    assert (f'data-presence-url="{url_of(item, "presence")}"' in html) == may_change
    assert (f'data-autosave-url="{url_of(item, "autosave")}"' in html) == may_change
    assert "<script>" not in html  # scripts are files, never inline
    if not may_change:
        assert client.post(url_of(item, "presence")).status_code == 403
        assert client.post(url_of(item, "autosave"), {"fields": '[["a", "b"]]'}).status_code == 403
        return
    assert "/static/editing/editing.js" in html
    assert client.post(url_of(item, "presence")).json() == {"others": []}
    assert client.post(url_of(item, "autosave"), {"fields": '[["a", "b"]]'}).status_code == 200
    assert client.get(url_of(item, "autosave")).json()["fields"] == [["a", "b"]]


def test_the_add_form_and_a_view_only_form_have_no_panel(post, make_staff_user, django_user_model):
    from django.contrib.auth.models import Permission

    assert 'id="editing-panel"' not in signed_in(make_staff_user("ed", "Editors")).get(
        "/admin/blog/post/add/").content.decode()
    viewer = django_user_model.objects.create_user("viewer", password="pw", is_staff=True)
    viewer.user_permissions.add(Permission.objects.get(codename="view_post"))
    page = signed_in(viewer).get(url_of(post, "change"))
    assert page.status_code == 200 and 'id="editing-panel"' not in page.content.decode()


@pytest.mark.parametrize("view", ["presence", "autosave"])
def test_signed_out_and_not_staff_are_refused_as_signed_out(view, post, django_user_model):
    reader = django_user_model.objects.create_user("reader", password="pw")
    for client in (Client(), signed_in(reader)):
        response = client.post(url_of(post, view), {"fields": '[["title", "x"]]'})
        assert (response.status_code, response.json()["error"]) == (403, "signed_out")
    assert not Autosave.objects.exists()


@pytest.mark.parametrize("view", ["presence", "autosave"])
def test_staff_who_may_not_change_the_item_are_refused(view, post, django_user_model, editor):
    from django.contrib.auth.models import Permission

    viewer = django_user_model.objects.create_user("viewer", password="pw", is_staff=True)
    viewer.user_permissions.add(Permission.objects.get(codename="view_post"))
    published = PostFactory(status=Status.PUBLISHED)  # an Editor changes drafts, not what is published
    for user, item in ((viewer, post), (editor, published)):
        response = signed_in(user).post(url_of(item, view), {"fields": "[]"})
        assert (response.status_code, response.json()["error"]) == (403, "forbidden"), user


@pytest.mark.parametrize("view", ["presence", "autosave"])
def test_an_item_that_is_not_there_is_a_404(view, ada):
    client = signed_in(ada)
    assert client.post(f"/admin/blog/post/999999/{view}/").status_code == 404
    assert client.post(f"/admin/blog/post/not-a-number/{view}/").status_code == 404


def test_wrong_methods_are_405(post, ada):
    client = signed_in(ada)
    assert client.get(url_of(post, "presence")).status_code == 405
    response = client.put(url_of(post, "autosave"))
    assert response.status_code == 405 and response["Allow"] == "GET, POST, DELETE"


@pytest.mark.parametrize("fields, message", [
    ("", "as JSON"),
    ("{not json", "as JSON"),
    ('{"title": "x"}', "list of [name, value] pairs"),
    ('[["title"]]', "list of [name, value] pairs"),
    ('[["title", 3]]', "list of [name, value] pairs"),
    (json.dumps([["f", "v"]] * 5001), "at most 5000 fields"),
    ("[" * 100_000, "as JSON"),  # deeper than Python's recursion limit: was a 500
    (json.dumps([["title", "a\x00b"]]), "NUL character"),  # PostgreSQL's jsonb refuses it: was a 500 there
])
def test_bad_fields_are_a_400_saying_what_is_wrong(fields, message, post, ada):
    response = signed_in(ada).post(url_of(post, "autosave"), {"fields": fields})
    assert response.status_code == 400 and message in response.json()["error"]
    assert not Autosave.objects.exists()


def test_more_than_the_limit_is_a_413(settings, post, ada):
    settings.EDITING_AUTOSAVE_MAX_BYTES = 2048
    client = signed_in(ada)
    fits = json.dumps([["body", "x" * 2000]])
    assert client.post(url_of(post, "autosave"), {"fields": fits}).status_code == 200
    response = client.post(url_of(post, "autosave"), {"fields": json.dumps([["body", "x" * 2100]])})
    assert response.status_code == 413 and "2 KiB" in response.json()["error"]
    huge = client.post(url_of(post, "autosave"), {"fields": json.dumps([["body", "%" * 3000]])})
    assert huge.status_code == 413  # refused by its length before it is read
    malformed = client.post(url_of(post, "autosave"), {"fields": fits}, CONTENT_LENGTH="many")
    assert malformed.status_code in (200, 400)  # Django reads it as empty or refuses it: never a 500
    assert len(Autosave.objects.get().fields[0][1]) == 2000


def test_the_csrf_token_is_required_and_never_kept(post, ada):
    client = signed_in(ada, enforce_csrf_checks=True)
    assert client.post(url_of(post, "autosave"), {"fields": '[["title", "x"]]'}).status_code == 403
    assert client.post(url_of(post, "presence")).status_code == 403
    client.get(url_of(post, "change"))
    token = client.cookies["csrftoken"].value
    response = client.post(url_of(post, "autosave"), {"fields": json.dumps([["csrfmiddlewaretoken", token],
                                                                            ["title", "x"]]),
                                                      "csrfmiddlewaretoken": token})
    assert response.status_code == 200
    assert Autosave.objects.get().fields == [["title", "x"]]
    assert client.delete(url_of(post, "autosave")).status_code == 403  # a DELETE needs the header
    assert client.delete(url_of(post, "autosave"), HTTP_X_CSRFTOKEN=token).status_code == 204


def test_a_session_that_ended_applies_nothing_and_the_text_is_saved_after_signing_in_again(
        post, ada, admin_form_data):
    """What editing.js does: the refused text is kept in the browser, sent once signed in, restored, saved."""
    client = signed_in(ada)
    page = client.get(url_of(post, "change"))
    Session.objects.all().delete()  # the session ends while Ada writes
    typed = admin_form_data(page, body="Written while signed out")
    saved = client.post(url_of(post, "change"), typed)
    assert saved.status_code == 302 and saved.url.startswith("/admin/login/")
    refused = client.post(url_of(post, "autosave"), {"fields": json.dumps([["body", "Written while signed out"]])})
    assert (refused.status_code, refused.json()["error"]) == (403, "signed_out")
    assert Post.objects.get(pk=post.pk).body == "Old body" and not Autosave.objects.exists()

    client.force_login(ada)
    pairs = [[name, value] for name, value in typed.items() if not isinstance(value, list)]
    pairs += [[name, item] for name, value in typed.items() if isinstance(value, list) for item in value]
    assert client.post(url_of(post, "autosave"), {"fields": json.dumps(pairs)}).status_code == 200
    assert "editing-saved-at\">" in client.get(url_of(post, "change")).content.decode()
    restored = {}
    for name, value in client.get(url_of(post, "autosave")).json()["fields"]:
        restored.setdefault(name, []).append(value)
    assert client.post(url_of(post, "change"), restored).status_code == 302
    assert Post.objects.get(pk=post.pk).body == "Written while signed out"
    assert not Autosave.objects.exists()
