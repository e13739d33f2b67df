"""The editorial record each path writes (admin form, bulk actions, API, transition()) and its backfill."""
import datetime

import pytest
from django.apps import apps
from django.contrib.admin.helpers import ACTION_CHECKBOX_NAME
from django.urls import reverse
from django.utils import timezone
from reversion.models import Revision, Version

from blog.factories import PostFactory
from blog.models import Post
from digests.factories import DigestFactory
from publishing.editorial_records import backfill
from publishing.workflow import Status

from ..api.conftest import bearer, make_token  # noqa: F401 (fixture)

pytestmark = pytest.mark.django_db


def test_transition_records_who_moved_the_item_and_when(editor):
    post = PostFactory(status=Status.DRAFT, published_at=None)
    before = timezone.now()
    post.transition(editor, Status.IN_REVIEW)
    post.refresh_from_db()
    assert post.status_changed_by == editor and post.status_changed_at >= before
    assert post.edited_by is None  # moving is not editing
    post.transition(editor, Status.IN_REVIEW)  # not a move: nothing new recorded
    post.refresh_from_db()
    assert post.status_changed_at >= before and not post.was_returned_to_draft


def test_the_admin_form_credits_the_creator_and_editor_but_not_a_status_change(client, editor, publisher,
                                                                               admin_form_data):
    client.force_login(editor)
    add = client.get(reverse("admin:digests_digest_add"))
    digest = DigestFactory.build()
    data = admin_form_data(add, topic=DigestFactory(status=Status.DRAFT).topic_id, date="2026-05-01",
                           headline="Made in the admin", summary="Text.", slug="made-in-the-admin",
                           status=Status.DRAFT, byline=digest.byline, section="The Wire")
    assert client.post(reverse("admin:digests_digest_add"), data).status_code == 302
    made = type(digest).objects.get(slug="made-in-the-admin")
    assert made.created_by == editor and made.edited_by == editor and made.status_changed_at is None

    change = reverse("admin:digests_digest_change", args=[made.pk])
    client.force_login(publisher)
    response = client.post(change, admin_form_data(client.get(change), status=Status.IN_REVIEW))
    assert response.status_code == 302
    made.refresh_from_db()
    assert made.status_changed_by == publisher and made.edited_by == editor  # a move, not an edit
    response = client.post(change, admin_form_data(client.get(change), headline="Rewritten"))
    made.refresh_from_db()
    assert made.edited_by == publisher and made.status_changed_by == publisher


def test_returning_to_draft_by_bulk_action_is_recorded(client, publisher, editor):
    post = PostFactory(status=Status.IN_REVIEW, published_at=None, created_by=editor, edited_by=editor)
    client.force_login(publisher)
    client.post(reverse("admin:blog_post_changelist"), {"action": "return_to_draft", ACTION_CHECKBOX_NAME: [post.pk]})
    post.refresh_from_db()
    assert post.status == Status.DRAFT and post.was_returned_to_draft and post.status_changed_by == publisher


def test_api_writes_credit_the_tokens_user(client, editor, make_token):  # noqa: F811
    from blog.factories import AuthorFactory

    author = AuthorFactory()
    body = {"title": "From a script", "slug": "from-a-script", "body": "Text.", "authors": [{"slug": author.slug}]}
    response = client.post("/api/v1/posts/", body, content_type="application/json",
                           **bearer(make_token(editor, "write:content", "read:drafts")))
    assert response.status_code == 201, response.content
    post = Post.objects.get(slug="from-a-script")
    assert post.created_by == editor and post.edited_by == editor
    response = client.post("/api/v1/posts/from-a-script/submit", content_type="application/json",
                           **bearer(make_token(editor, "write:content")))
    post.refresh_from_db()
    assert post.status == Status.IN_REVIEW and post.status_changed_by == editor


def test_revisions_leave_the_record_out(editor):
    """Rolling content back to an older version does not rewrite who submitted the item, or when."""
    post = PostFactory(status=Status.DRAFT, published_at=None)
    _revision(editor, timezone.now(), post, Status.DRAFT)
    stored = Version.objects.get_for_object(post).first().field_dict
    assert "title" in stored and "status" in stored
    assert not {"created_by", "edited_by", "status_changed_at", "status_changed_by"} & set(stored)


def _revision(user, when, obj, status: str) -> None:
    """A revision of `obj` with `status`, credited to `user` at `when` (as the admin or API would have saved)."""
    obj.status = status
    with revisions_context(user):
        obj.save()
    Revision.objects.filter(pk=Version.objects.get_for_object(obj).first().revision_id).update(date_created=when)


def revisions_context(user):
    import reversion

    class Context:
        def __enter__(self):
            self.inner = reversion.create_revision()
            self.inner.__enter__()
            reversion.set_user(user)

        def __exit__(self, *exc):
            return self.inner.__exit__(*exc)

    return Context()


def test_the_backfill_writes_what_revisions_prove_and_nothing_else(editor, publisher):
    created = PostFactory(status=Status.DRAFT, published_at=None, title="Has a history")
    start = created.created_at
    _revision(editor, start, created, Status.DRAFT)  # created in the admin by the editor
    _revision(publisher, start + datetime.timedelta(hours=1), created, Status.IN_REVIEW)  # submitted by the publisher
    unrecorded = PostFactory(status=Status.IN_REVIEW, published_at=None, title="No history")
    moved_since = PostFactory(status=Status.DRAFT, published_at=None, title="Moved outside revisions")
    _revision(editor, moved_since.created_at + datetime.timedelta(days=1), moved_since, Status.IN_REVIEW)
    Post.objects.filter(pk=moved_since.pk).update(status=Status.PUBLISHED)
    Post.objects.update(created_by=None, edited_by=None, status_changed_at=None, status_changed_by=None)

    assert backfill(apps, "blog", "post") == 1  # only the first post's history proves anything
    created.refresh_from_db()
    assert created.created_by == editor and created.edited_by == editor
    assert created.status_changed_by == publisher
    assert created.status_changed_at == start + datetime.timedelta(hours=1)
    unrecorded.refresh_from_db()
    assert (unrecorded.created_by, unrecorded.status_changed_at) == (None, None)
    moved_since.refresh_from_db()
    assert moved_since.created_by is None  # its first revision came a day after it was made
    assert moved_since.status_changed_at is None  # its last recorded move is not to its current status
