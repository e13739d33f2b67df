"""Two editors on one item never lose a change without being shown it (issue 37, edit conflicts).

Each test opens the change form as a browser would (a GET, posted back with ``admin_form_data``),
lets someone else write the item meanwhile (another signed-in client, the API, ingestion's code),
and then saves the stale form.
"""
import pytest
from django.test import Client
from django.urls import reverse

from blog.factories import AuthorFactory, PostFactory
from blog.models import Post, PostAuthor
from publishing.edit_conflicts import EDIT_BASE, EDIT_VERSION, RESOLVE
from publishing.workflow import Status

pytestmark = pytest.mark.django_db


def signed_in(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def change_url(obj) -> str:
    return reverse(f"admin:{obj._meta.app_label}_{obj._meta.model_name}_change", args=[obj.pk])


def save(client, page, admin_form_data, **changes):
    return client.post(page.wsgi_request.path, admin_form_data(page, **changes))


@pytest.fixture
def post():
    return PostFactory(status=Status.DRAFT, published_at=None, title="Old title", body="Old body",
                       excerpt="Old excerpt", authors=[AuthorFactory(name="Carol")])


@pytest.fixture
def ada(editor):
    editor.first_name, editor.last_name = "Ada", "Lovelace"
    editor.save()
    return editor


def test_two_editors_changing_different_fields_both_keep_their_change(post, ada, publisher, admin_form_data):
    a, b = signed_in(ada), signed_in(publisher)
    page_a, page_b = a.get(change_url(post)), b.get(change_url(post))
    assert save(a, page_a, admin_form_data, title="A's title").status_code == 302
    response = save(b, page_b, admin_form_data, body="B's body")
    assert response.status_code == 302
    post.refresh_from_db()
    assert (post.title, post.body) == ("A's title", "B's body")
    shown = [str(m) for m in b.get(response.url).context["messages"]]
    assert any("had changed since you opened it" in m and "Ada Lovelace" in m and "Title" in m for m in shown), shown


def api_etag(post) -> str:
    from api.responses import detail_json, etag_of
    from blog.schemas import PostOut

    return etag_of(detail_json(PostOut, Post.objects.with_listing_data().get(pk=post.pk)))


def test_the_form_carries_the_version_the_api_names_as_its_etag(post, publisher, client):
    page = signed_in(publisher).get(change_url(post))
    assert page.context["adminform"].form[EDIT_VERSION].value() == api_etag(post)
    assert f'name="{EDIT_BASE}"' in page.content.decode()


def test_the_same_field_changed_on_both_sides_is_not_saved_and_shows_both(post, ada, publisher, admin_form_data):
    a, b = signed_in(ada), signed_in(publisher)
    page_a, page_b = a.get(change_url(post)), b.get(change_url(post))
    assert save(a, page_a, admin_form_data, title="A's title").status_code == 302
    response = save(b, page_b, admin_form_data, title="B's <b>title</b>", body="B's body")
    assert response.status_code == 200
    post.refresh_from_db()
    assert (post.title, post.body) == ("A's title", "Old body")  # nothing of B's save applied
    form = response.context["adminform"].form
    assert form["title"].value() == "B's <b>title</b>" and form["body"].value() == "B's body"  # input intact
    html = response.content.decode()
    assert "B&#x27;s &lt;b&gt;title&lt;/b&gt;" in html and "<b>title</b>" not in html  # escaped
    assert "A&#x27;s title" in html and f'name="{RESOLVE}title"' in html  # both values, and the choice
    shown = [str(m) for m in response.context["messages"]]
    assert any("Not saved" in m and "Ada Lovelace" in m and "last at" in m for m in shown), shown
    assert form[EDIT_VERSION].value() == api_etag(post)  # the re-shown form carries the new version


@pytest.mark.parametrize("choice, title", [("theirs", "A's title"), ("mine", "B's title")])
def test_after_a_conflict_the_editor_chooses_and_saves_again(post, ada, publisher, admin_form_data, choice, title):
    a, b = signed_in(ada), signed_in(publisher)
    page_a, page_b = a.get(change_url(post)), b.get(change_url(post))
    save(a, page_a, admin_form_data, title="A's title", excerpt="A's excerpt")
    refused = save(b, page_b, admin_form_data, title="B's title", body="B's body")
    assert refused.status_code == 200
    response = b.post(change_url(post), admin_form_data(refused, **{RESOLVE + "title": choice}))
    assert response.status_code == 302, response.context and response.context["errors"]
    post.refresh_from_db()
    # A's excerpt, changed only by A, survives the second save as it did the first
    assert (post.title, post.body, post.excerpt) == (title, "B's body", "A's excerpt")


def test_edited_after_a_conflict_the_editors_text_is_saved(post, ada, publisher, admin_form_data):
    a, b = signed_in(ada), signed_in(publisher)
    page_a, page_b = a.get(change_url(post)), b.get(change_url(post))
    save(a, page_a, admin_form_data, title="A's title")
    refused = save(b, page_b, admin_form_data, title="B's title")
    assert b.post(change_url(post), admin_form_data(refused, title="Both titles")).status_code == 302
    assert Post.objects.get(pk=post.pk).title == "Both titles"


def test_a_form_without_changes_under_it_saves_as_before(post, publisher, admin_form_data):
    b = signed_in(publisher)
    assert save(b, b.get(change_url(post)), admin_form_data, title="New").status_code == 302
    assert Post.objects.get(pk=post.pk).title == "New"


def test_a_tampered_snapshot_is_refused_with_the_form_again(post, publisher, admin_form_data):
    b = signed_in(publisher)
    page = b.get(change_url(post))
    response = b.post(change_url(post), admin_form_data(page, title="New", **{EDIT_BASE: "forged"}))
    assert response.status_code == 200 and "damaged" in response.content.decode()
    assert Post.objects.get(pk=post.pk).title == "Old title"


def test_a_scheduled_publish_meanwhile_neither_conflicts_nor_is_undone(post, ada, publisher, admin_form_data):
    import datetime

    from django.utils import timezone

    b = signed_in(publisher)
    page = b.get(change_url(post))
    when = timezone.now() + datetime.timedelta(days=1)
    post.transition(publisher, Status.PUBLISHED, published_at=when)  # what the bulk action and the scheduler do
    response = save(b, page, admin_form_data, body="B's body")
    assert response.status_code == 302, response.context and response.context["errors"]
    post.refresh_from_db()
    assert (post.status, post.published_at, post.body) == (Status.PUBLISHED, when, "B's body")


def test_bylines_added_by_another_editor_survive_a_stale_form(post, ada, publisher, admin_form_data):
    dave = AuthorFactory(name="Dave")
    b = signed_in(publisher)
    page = b.get(change_url(post))
    PostAuthor.objects.create(post=post, author=dave, position=1)
    assert save(b, page, admin_form_data, body="B's body").status_code == 302
    assert [a.name for a in Post.objects.get(pk=post.pk).ordered_authors()] == ["Carol", "Dave"]


def test_a_byline_row_changed_on_both_sides_is_a_conflict(post, ada, publisher, admin_form_data):
    dave, erin = AuthorFactory(name="Dave"), AuthorFactory(name="Erin")
    b = signed_in(publisher)
    page = b.get(change_url(post))
    PostAuthor.objects.filter(post=post).update(author=dave)
    response = save(b, page, admin_form_data, **{"post_authors-0-author": str(erin.pk)})
    assert response.status_code == 200
    assert [a.name for a in Post.objects.get(pk=post.pk).ordered_authors()] == ["Dave"]
    assert "Dave" in response.content.decode() and f'name="{RESOLVE}post_authors-0-author"' in response.content.decode()
    again = b.post(change_url(post), admin_form_data(response, **{RESOLVE + "post_authors-0-author": "theirs"}))
    assert again.status_code == 302
    assert [a.name for a in Post.objects.get(pk=post.pk).ordered_authors()] == ["Dave"]


def test_a_byline_row_removed_meanwhile_stays_removed_unless_the_editor_changed_it(post, publisher, admin_form_data):
    dave = AuthorFactory(name="Dave")
    b = signed_in(publisher)
    page, page2 = b.get(change_url(post)), b.get(change_url(post))
    PostAuthor.objects.filter(post=post).delete()  # as the API's PUT does: the byline's rows replaced
    PostAuthor.objects.create(post=post, author=dave, position=0)
    assert save(b, page, admin_form_data, body="B's body").status_code == 302
    assert [a.name for a in Post.objects.get(pk=post.pk).ordered_authors()] == ["Dave"]
    response = save(b, page2, admin_form_data, **{"post_authors-0-position": "7"})
    assert response.status_code == 200 and "removed this row" in response.content.decode()
