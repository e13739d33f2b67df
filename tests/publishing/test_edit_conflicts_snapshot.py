"""What a change form's snapshot and version mean on a save (issue 37, edit conflicts).

A browser's line endings are no change; a snapshot belongs to one item; the version is computed
once a request and, when still the item's, spares the save its field-by-field merge; who changed
the item meanwhile is read from the changes since the form was opened, not the whole history.
"""
import pytest
import reversion
from django.contrib import admin
from django.db.models.signals import post_init
from reversion.models import Version

from blog.factories import AuthorFactory, PostFactory
from blog.models import Post
from publishing.edit_conflicts import EDIT_BASE, MergingFormMixin, OpenedAtForm
from publishing.workflow import Status

from .test_edit_conflicts import change_url, save, signed_in

pytestmark = pytest.mark.django_db


@pytest.fixture
def post():
    return PostFactory(status=Status.DRAFT, published_at=None, title="Old title", body="Line one\nLine two",
                       authors=[AuthorFactory(name="Carol")])


def test_a_textarea_posted_with_crlf_is_no_change_and_merges_with_a_redraft(post, editor, admin_form_data):
    b = signed_in(editor)
    page = b.get(change_url(post))
    Post.objects.filter(pk=post.pk).update(body="Redrafted\nbody")  # as ingestion's redraft writes
    response = save(b, page, admin_form_data, title="B's title", body="Line one\r\nLine two\r\n")
    assert response.status_code == 302, response.context and response.context["errors"]
    post.refresh_from_db()
    assert (post.title, post.body) == ("B's title", "Redrafted\nbody")


def test_a_snapshot_of_another_item_is_refused_with_the_form_again(post, publisher, admin_form_data):
    other = PostFactory(status=Status.DRAFT, published_at=None, title="Other title", authors=[AuthorFactory()])
    b = signed_in(publisher)
    foreign = b.get(change_url(post)).context["adminform"].form[EDIT_BASE].value()
    response = b.post(change_url(other), admin_form_data(b.get(change_url(other)), title="New",
                                                         **{EDIT_BASE: foreign}))
    assert response.status_code == 200 and "damaged" in response.content.decode()
    assert Post.objects.get(pk=other.pk).title == "Other title"


@pytest.fixture
def calls(monkeypatch):
    """How often a request computes the post's version, and merges the post's own fields."""
    counted = {"version": 0, "merge": 0}
    post_admin = type(admin.site._registry[Post])
    version, merge = post_admin.edit_version, MergingFormMixin._merge

    def counted_version(self, obj):
        counted["version"] += 1
        return version(self, obj)

    def counted_merge(self, opened):
        counted["merge"] += isinstance(self, OpenedAtForm)
        return merge(self, opened)

    monkeypatch.setattr(post_admin, "edit_version", counted_version)
    monkeypatch.setattr(MergingFormMixin, "_merge", counted_merge)
    return counted


def test_the_version_is_computed_once_per_request(post, publisher, calls):
    signed_in(publisher).get(change_url(post))
    assert calls["version"] == 1


def test_a_save_with_nothing_changed_meanwhile_skips_the_merge(post, publisher, admin_form_data, calls):
    b = signed_in(publisher)
    page = b.get(change_url(post))
    assert save(b, page, admin_form_data, title="New").status_code == 302
    assert (calls["version"], calls["merge"]) == (2, 0)  # one for the GET, one for the save
    assert Post.objects.get(pk=post.pk).title == "New"


def test_a_save_after_a_change_meanwhile_merges(post, publisher, admin_form_data, calls):
    b = signed_in(publisher)
    page = b.get(change_url(post))
    Post.objects.filter(pk=post.pk).update(body="Theirs")
    assert save(b, page, admin_form_data, title="New").status_code == 302
    assert calls["merge"] == 1
    post.refresh_from_db()
    assert (post.title, post.body) == ("New", "Theirs")


def test_who_changed_it_loads_only_the_changes_since_the_form_was_opened(post, editor, publisher, monkeypatch):
    from django.utils import timezone

    for n in range(5):
        with reversion.create_revision():
            reversion.set_user(publisher)
            post.title = f"Earlier {n}"
            post.save()
    since = timezone.now().isoformat()
    with reversion.create_revision():
        reversion.set_user(editor)
        post.title = "Meanwhile"
        post.save()
    loaded = []
    post_init.connect(lambda sender, instance, **kw: loaded.append(instance), sender=Version, weak=False,
                      dispatch_uid="test-changed-by")
    try:
        said = admin.site._registry[Post].changed_by(post, since)
    finally:
        post_init.disconnect(sender=Version, dispatch_uid="test-changed-by")
    assert said.startswith(f"{editor.get_full_name() or editor.get_username()} changed it, last at ")
    assert len(loaded) == 1
