"""What an editor typed and has not saved (issue 37, autosave): kept per editor and item on the server,
restored from another browser, never another editor's nor a revision, removed by a save or a discard."""
import json

import pytest
from django.utils import timezone
from reversion.models import Version

from blog.models import Post
from editing.models import Autosave
from publishing.workflow import Status

from .conftest import signed_in, url_of

pytestmark = pytest.mark.django_db


def typed(page, admin_form_data, **changes) -> list:
    """The [name, value] pairs editing.js sends for the form `page` showed, with `changes` typed in."""
    pairs = []
    for name, value in admin_form_data(page, **changes).items():
        pairs += [[name, item] for item in value] if isinstance(value, list) else [[name, value]]
    return [pair for pair in pairs if pair[0] != "csrfmiddlewaretoken"]


def keep(client, item, pairs):
    return client.post(url_of(item, "autosave"), {"fields": json.dumps(pairs)})


def as_post_data(pairs) -> dict:
    data = {}
    for name, value in pairs:
        data.setdefault(name, []).append(value)
    return data


@pytest.mark.parametrize("role", ["ada", "bob"])  # an Editor, a Publisher
def test_kept_as_typed_and_restored_in_another_browser(request, role, post, admin_form_data):
    user = request.getfixturevalue(role)
    first = signed_in(user)
    pairs = typed(first.get(url_of(post, "change")), admin_form_data, body="Half a new body")
    response = keep(first, post, pairs)
    assert response.status_code == 200, response.content
    assert set(response.json()) == {"saved_at", "shown"}

    other_browser = signed_in(user)
    page = other_browser.get(url_of(post, "change")).content.decode()
    assert f"You have unsaved changes from <span class=\"editing-saved-at\">{response.json()['shown']}</span>" in page
    restored = other_browser.get(url_of(post, "autosave")).json()
    assert restored["fields"] == pairs and ["body", "Half a new body"] in restored["fields"]


def test_another_editor_can_neither_read_nor_replace_it(post, ada, bob, admin_form_data):
    a, b = signed_in(ada), signed_in(bob)
    pairs = typed(a.get(url_of(post, "change")), admin_form_data, body="Ada's draft")
    keep(a, post, pairs)
    assert b.get(url_of(post, "autosave")).status_code == 404
    assert "editing-saved-at\"></span>" in b.get(url_of(post, "change")).content.decode()  # nothing offered
    keep(b, post, [["body", "Bob's"]])
    b.delete(url_of(post, "autosave"))
    assert a.get(url_of(post, "autosave")).json()["fields"] == pairs


def test_never_a_revision_and_never_the_item(post, ada, admin_form_data):
    a = signed_in(ada)
    versions = Version.objects.get_for_object(post).count()
    keep(a, post, typed(a.get(url_of(post, "change")), admin_form_data, title="Not yet"))
    assert Version.objects.get_for_object(post).count() == versions
    assert Post.objects.get(pk=post.pk).title == "Old title"
    assert not Version.objects.filter(content_type__app_label="editing").exists()


def test_readers_never_see_it(post, ada, client):
    keep(signed_in(ada), post, [["title", "Secret title"]])
    assert client.get(url_of(post, "autosave")).status_code == 403
    Post.objects.filter(pk=post.pk).update(status=Status.PUBLISHED, published_at=timezone.now())
    page = client.get(post.get_absolute_url())
    assert page.status_code == 200 and "Old title" in page.content.decode()
    assert "Secret title" not in page.content.decode()


def test_discarded(post, ada):
    a = signed_in(ada)
    keep(a, post, [["title", "Gone"]])
    assert a.delete(url_of(post, "autosave")).status_code == 204
    assert a.get(url_of(post, "autosave")).status_code == 404
    assert not Autosave.objects.exists()


def test_removed_when_the_form_is_saved(post, ada, admin_form_data):
    a = signed_in(ada)
    page = a.get(url_of(post, "change"))
    keep(a, post, typed(page, admin_form_data, body="New body"))
    assert a.post(url_of(post, "change"), admin_form_data(page, body="New body")).status_code == 302
    assert not Autosave.objects.exists()
    assert Post.objects.get(pk=post.pk).body == "New body"


def test_kept_when_the_save_is_refused(post, ada, bob, admin_form_data):
    a, b = signed_in(ada), signed_in(bob)
    page_a, page_b = a.get(url_of(post, "change")), b.get(url_of(post, "change"))
    assert b.post(url_of(post, "change"), admin_form_data(page_b, title="Bob's title")).status_code == 302
    keep(a, post, typed(page_a, admin_form_data, title="Ada's title"))
    refused = a.post(url_of(post, "change"), admin_form_data(page_a, title="Ada's title"))
    assert refused.status_code == 200  # the conflict form
    assert ["title", "Ada's title"] in Autosave.objects.get(user=ada).fields
    assert "editing-saved-at\"></span>" in refused.content.decode()  # the form holds the text: nothing offered


def test_a_restored_autosave_saves_through_the_conflict_rules(post, ada, bob, admin_form_data):
    """The autosave keeps the version the form was opened at: restored over a fresh form after someone
    else saved, fields only they changed merge and fields both changed come back side by side."""
    a, b = signed_in(ada), signed_in(bob)
    keep(a, post, typed(a.get(url_of(post, "change")), admin_form_data, title="Ada's title", body="Ada's body"))
    page_b = b.get(url_of(post, "change"))
    assert b.post(url_of(post, "change"), admin_form_data(page_b, title="Bob's title",
                                                          excerpt="Bob's excerpt")).status_code == 302
    restored = a.get(url_of(post, "autosave")).json()["fields"]
    refused = a.post(url_of(post, "change"), as_post_data(restored))
    assert refused.status_code == 200
    assert Post.objects.filter(pk=post.pk, title="Bob's title", body="Old body").exists()
    assert "Ada&#x27;s title" in refused.content.decode() and "Bob&#x27;s title" in refused.content.decode()

    merged = as_post_data(restored)
    merged["title"] = ["Bob's title"]  # Ada takes theirs: her body and his excerpt both survive
    assert a.post(url_of(post, "change"), merged).status_code == 302
    assert Post.objects.filter(pk=post.pk, title="Bob's title", body="Ada's body", excerpt="Bob's excerpt").exists()
    assert not Autosave.objects.exists()


def test_deleting_the_item_removes_every_editors_autosave(post, ada, bob, admin_client):
    keep(signed_in(ada), post, [["title", "A"]])
    keep(signed_in(bob), post, [["title", "B"]])
    assert admin_client.post(url_of(post, "delete"), {"post": "yes"}).status_code == 302
    assert not Autosave.objects.exists()


def test_a_bulk_delete_removes_every_editors_autosave_of_those_items(post, ada, admin_client):
    from blog.factories import PostFactory

    other = PostFactory(status=Status.DRAFT, published_at=None)
    assert keep(signed_in(ada), post, [["title", "A"]]).status_code == 200
    assert keep(signed_in(ada), other, [["title", "B"]]).status_code == 200
    response = admin_client.post("/admin/blog/post/", {"action": "delete_selected", "_selected_action": [post.pk],
                                                       "post": "yes"})
    assert response.status_code == 302
    assert list(Autosave.objects.values_list("object_id", flat=True)) == [str(other.pk)]
