"""The editorial workflow and who may move content through it.

Editors write drafts and submit them; only Publishers publish, schedule and
archive. Each rule is exercised on every path that can change a status: the
model's ``transition()``, the admin change form, and the admin bulk actions --
for digests and for posts alike.
"""
import datetime

import pytest
from django.contrib.admin.helpers import ACTION_CHECKBOX_NAME
from django.contrib.messages import get_messages
from django.urls import reverse
from django.utils import timezone

from blog.factories import AuthorFactory, PostFactory
from blog.models import Post
from digests.factories import DigestFactory, DigestReferenceFactory, TopicFactory
from digests.models import Digest
from publishing.workflow import Status, WorkflowError

pytestmark = pytest.mark.django_db

FACTORIES = {"digest": DigestFactory, "post": PostFactory}
ADMIN_PREFIX = {"digest": "digests_digest", "post": "blog_post"}


@pytest.fixture(params=["digest", "post"])
def kind(request) -> str:
    return request.param


def make(kind: str, status: str, **fields):
    """A digest or post in `status` (published ones have a past published_at, others none)."""
    if status != Status.PUBLISHED:
        fields.setdefault("published_at", None)
    return FACTORIES[kind](status=status, **fields)


def change_url(kind: str, obj) -> str:
    return reverse(f"admin:{ADMIN_PREFIX[kind]}_change", args=[obj.pk])


def changelist_url(kind: str) -> str:
    return reverse(f"admin:{ADMIN_PREFIX[kind]}_changelist")


def message_texts(response) -> list[str]:
    return [str(message) for message in get_messages(response.wsgi_request)]


def reload(obj):
    return type(obj).objects.get(pk=obj.pk)


# --- the model layer: transition() -------------------------------------------------------------


@pytest.mark.parametrize(
    ("start", "target"),
    [
        (Status.DRAFT, Status.PUBLISHED),
        (Status.IN_REVIEW, Status.PUBLISHED),
        (Status.DRAFT, Status.ARCHIVED),
        (Status.IN_REVIEW, Status.ARCHIVED),
        (Status.PUBLISHED, Status.ARCHIVED),
        (Status.PUBLISHED, Status.DRAFT),
        (Status.PUBLISHED, Status.IN_REVIEW),
        (Status.ARCHIVED, Status.PUBLISHED),
        (Status.ARCHIVED, Status.DRAFT),
    ],
)
def test_editor_cannot_make_publisher_transitions(kind, editor, start, target):
    obj = make(kind, start)
    with pytest.raises(WorkflowError, match="only Publishers"):
        obj.transition(editor, target)
    assert reload(obj).status == start


@pytest.mark.parametrize(
    ("start", "target"), [(Status.DRAFT, Status.IN_REVIEW), (Status.IN_REVIEW, Status.DRAFT)]
)
def test_editor_submits_for_review_and_takes_back(kind, editor, start, target):
    obj = make(kind, start)
    obj.transition(editor, target)
    assert reload(obj).status == target
    assert reload(obj).published_at is None


@pytest.mark.parametrize("status", [Status.PUBLISHED, Status.ARCHIVED])
def test_editor_cannot_resave_public_items_through_transition(kind, editor, status):
    """A "transition" to the same status is a save; on a public item that is an edit editors may not make."""
    obj = make(kind, status)
    original = str(obj)
    setattr(obj, "headline" if kind == "digest" else "title", "Rewritten by an editor")
    with pytest.raises(WorkflowError):
        obj.transition(editor, status)
    assert str(reload(obj)) == original


def test_editor_cannot_schedule_through_transition(kind, editor):
    """Choosing when something goes live is a publishing decision, even while it is still in review."""
    obj = make(kind, Status.DRAFT)
    future = timezone.now() + datetime.timedelta(days=2)
    with pytest.raises(WorkflowError):
        obj.transition(editor, Status.IN_REVIEW, published_at=future)
    fresh = reload(obj)
    assert (fresh.status, fresh.published_at) == (Status.DRAFT, None)


def test_publisher_publishes_now_when_no_time_given(kind, publisher):
    obj = make(kind, Status.IN_REVIEW)
    before = timezone.now()
    obj.transition(publisher, Status.PUBLISHED)
    fresh = reload(obj)
    assert fresh.status == Status.PUBLISHED
    assert before <= fresh.published_at <= timezone.now()
    assert fresh.is_published and not fresh.is_scheduled
    assert type(obj).objects.published().filter(pk=obj.pk).exists()


def test_publisher_schedules_with_future_time(kind, publisher):
    obj = make(kind, Status.IN_REVIEW)
    future = timezone.now() + datetime.timedelta(hours=3)
    obj.transition(publisher, Status.PUBLISHED, published_at=future)
    fresh = reload(obj)
    assert (fresh.status, fresh.published_at) == (Status.PUBLISHED, future)
    assert fresh.is_scheduled and fresh.display_status == "Scheduled"
    assert not type(obj).objects.published().filter(pk=obj.pk).exists()


def test_publisher_archives_and_restores(kind, publisher):
    obj = make(kind, Status.PUBLISHED)
    obj.transition(publisher, Status.ARCHIVED)
    assert reload(obj).status == Status.ARCHIVED
    assert not type(obj).objects.published().filter(pk=obj.pk).exists()
    obj.transition(publisher, Status.DRAFT)
    assert reload(obj).status == Status.DRAFT


def test_publishing_keeps_an_existing_time(kind, publisher):
    earlier = timezone.now() - datetime.timedelta(days=5)
    obj = make(kind, Status.IN_REVIEW, published_at=earlier)
    obj.transition(publisher, Status.PUBLISHED)
    assert reload(obj).published_at == earlier


def test_anonymous_user_cannot_publish(kind):
    obj = make(kind, Status.IN_REVIEW)
    with pytest.raises(WorkflowError):
        obj.transition(None, Status.PUBLISHED)


@pytest.mark.parametrize(
    ("status", "editor_may_edit"),
    [(Status.DRAFT, True), (Status.IN_REVIEW, True), (Status.PUBLISHED, False), (Status.ARCHIVED, False)],
)
def test_can_edit(kind, editor, publisher, status, editor_may_edit):
    obj = make(kind, status)
    assert obj.can_edit(editor) is editor_may_edit
    assert obj.can_edit(publisher) is True


def test_superuser_is_a_publisher(kind, admin_user):
    obj = make(kind, Status.DRAFT)
    obj.transition(admin_user, Status.PUBLISHED)
    assert reload(obj).status == Status.PUBLISHED


# --- the admin change form --------------------------------------------------------------------


def test_editor_status_choices_exclude_publishing(kind, client, editor, admin_form_data):
    obj = make(kind, Status.DRAFT)
    client.force_login(editor)
    response = client.get(change_url(kind, obj))
    assert response.status_code == 200
    form = response.context["adminform"].form
    assert [value for value, _ in form.fields["status"].choices] == [Status.DRAFT, Status.IN_REVIEW]
    assert "published_at" not in form.fields


@pytest.mark.parametrize("target", [Status.PUBLISHED, Status.ARCHIVED])
def test_editor_change_form_cannot_publish_or_archive(kind, client, editor, admin_form_data, target):
    obj = make(kind, Status.IN_REVIEW)
    client.force_login(editor)
    data = admin_form_data(client.get(change_url(kind, obj)), status=target)
    response = client.post(change_url(kind, obj), data)
    assert response.status_code == 200  # the form comes back with an error
    assert "status" in response.context["adminform"].form.errors
    fresh = reload(obj)
    assert (fresh.status, fresh.published_at) == (Status.IN_REVIEW, None)


def test_editor_change_form_cannot_set_published_at(kind, client, editor, admin_form_data):
    obj = make(kind, Status.DRAFT)
    client.force_login(editor)
    data = admin_form_data(client.get(change_url(kind, obj)))
    data.update({"published_at_0": "2030-01-01", "published_at_1": "10:00:00", "published_at": "2030-01-01 10:00"})
    response = client.post(change_url(kind, obj), data)
    assert response.status_code == 302
    assert reload(obj).published_at is None


def test_editor_submits_for_review_through_change_form(kind, client, editor, admin_form_data):
    obj = make(kind, Status.DRAFT)
    client.force_login(editor)
    data = admin_form_data(client.get(change_url(kind, obj)), status=Status.IN_REVIEW)
    response = client.post(change_url(kind, obj), data)
    assert response.status_code == 302, response.context and response.context["adminform"].form.errors
    assert reload(obj).status == Status.IN_REVIEW


@pytest.mark.parametrize("status", [Status.PUBLISHED, Status.ARCHIVED])
def test_editor_sees_public_items_read_only(kind, client, editor, admin_form_data, status):
    obj = make(kind, status)
    client.force_login(editor)
    response = client.get(change_url(kind, obj))
    assert response.status_code == 200
    assert response.context["has_change_permission"] is False
    assert 'name="_save"' not in response.content.decode()
    # Inlines are read-only too: no empty rows to add, no editable rows.
    for inline in response.context["inline_admin_formsets"]:
        assert not inline.has_add_permission and not inline.has_change_permission, inline.opts


@pytest.mark.parametrize("status", [Status.PUBLISHED, Status.ARCHIVED])
def test_editor_cannot_post_changes_to_public_items(kind, client, editor, publisher, admin_form_data, status):
    obj = make(kind, status)
    client.force_login(publisher)
    data = admin_form_data(client.get(change_url(kind, obj)), status=Status.DRAFT)
    client.force_login(editor)
    response = client.post(change_url(kind, obj), data)
    assert response.status_code == 403
    assert reload(obj).status == status


def test_editor_cannot_delete(kind, client, editor):
    obj = make(kind, Status.DRAFT)
    client.force_login(editor)
    response = client.post(reverse(f"admin:{ADMIN_PREFIX[kind]}_delete", args=[obj.pk]), {"post": "yes"})
    assert response.status_code == 403
    assert type(obj).objects.filter(pk=obj.pk).exists()


def test_publisher_publishes_through_change_form(kind, client, publisher, admin_form_data):
    obj = make(kind, Status.IN_REVIEW)
    client.force_login(publisher)
    data = admin_form_data(client.get(change_url(kind, obj)), status=Status.PUBLISHED)
    assert data["published_at_0"] == "" and data["published_at_1"] == ""
    response = client.post(change_url(kind, obj), data)
    assert response.status_code == 302
    fresh = reload(obj)
    assert fresh.status == Status.PUBLISHED
    assert timezone.now() - fresh.published_at < datetime.timedelta(minutes=1)
    assert client.get(fresh.get_absolute_url()).status_code == 200


def test_publisher_schedules_through_change_form(kind, client, publisher, admin_form_data):
    obj = make(kind, Status.IN_REVIEW)
    client.force_login(publisher)
    when = (timezone.now() + datetime.timedelta(days=1)).replace(microsecond=0)
    data = admin_form_data(
        client.get(change_url(kind, obj)),
        status=Status.PUBLISHED,
        published_at_0=timezone.localtime(when).strftime("%Y-%m-%d"),
        published_at_1=timezone.localtime(when).strftime("%H:%M:%S"),
    )
    response = client.post(change_url(kind, obj), data)
    assert response.status_code == 302
    fresh = reload(obj)
    assert (fresh.status, fresh.published_at) == (Status.PUBLISHED, when)
    assert client.get(fresh.get_absolute_url()).status_code == 404
    listing = client.get(changelist_url(kind))
    assert f"Scheduled for {timezone.localtime(when):%Y-%m-%d %H:%M}" in listing.content.decode()


def test_publisher_archives_through_change_form(kind, client, publisher, admin_form_data):
    obj = make(kind, Status.PUBLISHED)
    client.force_login(publisher)
    data = admin_form_data(client.get(change_url(kind, obj)), status=Status.ARCHIVED)
    assert client.post(change_url(kind, obj), data).status_code == 302
    assert reload(obj).status == Status.ARCHIVED
    assert client.get(obj.get_absolute_url()).status_code == 404


# --- creating drafts --------------------------------------------------------------------------


def test_editor_drafts_a_digest_with_references_and_action_items(client, editor, admin_form_data):
    topic = TopicFactory(name="PyTorch", slug="pytorch")
    cited = DigestReferenceFactory(digest=DigestFactory(topic=TopicFactory()), number=1).reference
    client.force_login(editor)
    url = reverse("admin:digests_digest_add")
    data = admin_form_data(
        client.get(url),
        topic=topic.pk,
        date="2026-06-29",
        headline="Inductor fixes a backward crash",
        slug="pytorch-2026-06-29",
        summary="Inductor fixed a crash [ref:1].",
        status=Status.IN_REVIEW,
        **{
            "digest_references-0-number": "1",
            "digest_references-0-reference": str(cited.pk),
            "action_items-0-position": "1",
            "action_items-0-text": "Upgrade now",
            "action_items-0-repository": str(cited.repository_id),
            "action_items-0-priority": "immediate",
        },
    )
    response = client.post(url, data)
    assert response.status_code == 302, response.context and response.context["errors"]
    digest = Digest.objects.get(slug="pytorch-2026-06-29")
    assert (digest.status, digest.published_at, digest.topic) == (Status.IN_REVIEW, None, topic)
    assert [(c.number, c.reference) for c in digest.digest_references.all()] == [(1, cited)]
    assert [(a.text, a.repository, a.priority) for a in digest.action_items.all()] == [
        ("Upgrade now", cited.repository, "immediate")
    ]


def test_editor_cannot_create_an_already_published_digest(client, editor, admin_form_data):
    topic = TopicFactory()
    client.force_login(editor)
    url = reverse("admin:digests_digest_add")
    data = admin_form_data(
        client.get(url), topic=topic.pk, date="2026-06-29", headline="H", slug="h", summary="S",
        status=Status.PUBLISHED,
    )
    response = client.post(url, data)
    assert response.status_code == 200
    assert "status" in response.context["adminform"].form.errors
    assert not Digest.objects.exists()


def test_editor_drafts_a_post_with_ordered_authors(client, editor, admin_form_data):
    first, second = AuthorFactory(name="Ada"), AuthorFactory(name="Grace")
    client.force_login(editor)
    url = reverse("admin:blog_post_add")
    data = admin_form_data(
        client.get(url),
        title="A post",
        slug="a-post",
        body="Hello *world*",
        status=Status.DRAFT,
        **{
            "post_authors-TOTAL_FORMS": "2",
            "post_authors-0-position": "2",
            "post_authors-0-author": str(first.pk),
            "post_authors-1-position": "1",
            "post_authors-1-author": str(second.pk),
        },
    )
    response = client.post(url, data)
    assert response.status_code == 302, response.context and response.context["errors"]
    post = Post.objects.get(slug="a-post")
    assert post.status == Status.DRAFT
    assert post.ordered_authors() == [second, first]
    assert "<em>world</em>" in post.body_html


# --- the admin bulk actions -------------------------------------------------------------------


def run_action(client, kind: str, action: str, objs):
    return client.post(
        changelist_url(kind), {"action": action, ACTION_CHECKBOX_NAME: [str(obj.pk) for obj in objs]}, follow=True
    )


def test_editor_is_not_offered_publish_or_archive(kind, client, editor, publisher):
    make(kind, Status.DRAFT)
    client.force_login(editor)
    editor_actions = {name for name, _ in client.get(changelist_url(kind)).context["action_form"].fields["action"].choices}
    assert {"submit_for_review", "return_to_draft"} <= editor_actions
    assert not {"publish", "archive"} & editor_actions
    client.force_login(publisher)
    publisher_actions = {
        name for name, _ in client.get(changelist_url(kind)).context["action_form"].fields["action"].choices
    }
    assert {"submit_for_review", "return_to_draft", "publish", "archive"} <= publisher_actions


@pytest.mark.parametrize(("action", "start"), [("publish", Status.IN_REVIEW), ("archive", Status.PUBLISHED)])
def test_editor_posting_publish_or_archive_anyway_is_refused(kind, client, editor, action, start):
    obj = make(kind, start)
    client.force_login(editor)
    response = run_action(client, kind, action, [obj])
    assert response.status_code == 200
    assert reload(obj).status == start
    assert not any(text.startswith(("Published", "Archived")) for text in message_texts(response))


def test_editor_bulk_submits_drafts_but_not_public_items(kind, client, editor):
    draft, live = make(kind, Status.DRAFT), make(kind, Status.PUBLISHED)
    client.force_login(editor)
    response = run_action(client, kind, "submit_for_review", [draft, live])
    assert reload(draft).status == Status.IN_REVIEW
    assert reload(live).status == Status.PUBLISHED
    texts = message_texts(response)
    assert "Submitted for review: 1 item." in texts
    assert any("only Publishers" in text for text in texts)


def test_publisher_bulk_publishes_and_archives(kind, client, publisher):
    pending = [make(kind, Status.IN_REVIEW) for _ in range(2)]
    client.force_login(publisher)
    response = run_action(client, kind, "publish", pending)
    assert "Published: 2 items." in message_texts(response)
    for obj in pending:
        fresh = reload(obj)
        assert fresh.status == Status.PUBLISHED and fresh.published_at is not None
    assert type(pending[0]).objects.published().count() == 2
    run_action(client, kind, "archive", pending)
    assert {reload(obj).status for obj in pending} == {Status.ARCHIVED}


def test_bulk_publish_keeps_a_scheduled_time(kind, client, publisher):
    future = timezone.now() + datetime.timedelta(days=3)
    obj = make(kind, Status.IN_REVIEW, published_at=future)
    client.force_login(publisher)
    run_action(client, kind, "publish", [obj])
    fresh = reload(obj)
    assert (fresh.status, fresh.published_at) == (Status.PUBLISHED, future)
    assert not type(obj).objects.published().filter(pk=obj.pk).exists()


# --- staff preview and "view on site" ---------------------------------------------------------


@pytest.mark.parametrize("status", [Status.DRAFT, Status.IN_REVIEW, Status.ARCHIVED])
def test_staff_preview_shows_unpublished_items(kind, client, editor, status):
    obj = make(kind, status)
    title = obj.headline if kind == "digest" else obj.title
    preview = reverse(f"{'digests' if kind == 'digest' else 'blog'}:preview", args=[obj.pk])
    assert client.get(obj.get_absolute_url()).status_code == 404
    anonymous = client.get(preview)
    assert anonymous.status_code == 302
    assert anonymous["Location"].startswith(reverse("admin:login"))
    client.force_login(editor)
    response = client.get(preview)
    assert response.status_code == 200
    body = response.content.decode()
    assert title in body
    assert f"Preview: {obj.display_status}" in body


def test_scheduled_item_preview_says_scheduled(kind, client, editor):
    obj = make(kind, Status.PUBLISHED, published_at=timezone.now() + datetime.timedelta(days=1))
    client.force_login(editor)
    response = client.get(reverse(f"{'digests' if kind == 'digest' else 'blog'}:preview", args=[obj.pk]))
    assert "Preview: Scheduled" in response.content.decode()
    assert client.get(obj.get_absolute_url()).status_code == 404


def test_non_staff_user_cannot_preview(kind, client, django_user_model):
    obj = make(kind, Status.DRAFT)
    client.force_login(django_user_model.objects.create_user("reader", password="pw"))
    response = client.get(reverse(f"{'digests' if kind == 'digest' else 'blog'}:preview", args=[obj.pk]))
    assert response.status_code == 302
    assert (obj.headline if kind == "digest" else obj.title) not in response.content.decode()


def test_preview_of_missing_item_is_404(kind, client, editor):
    client.force_login(editor)
    assert client.get(reverse(f"{'digests' if kind == 'digest' else 'blog'}:preview", args=[999999])).status_code == 404


@pytest.mark.parametrize(
    ("status", "future", "expects_preview"),
    [
        (Status.DRAFT, False, True),
        (Status.IN_REVIEW, False, True),
        (Status.PUBLISHED, True, True),
        (Status.ARCHIVED, False, True),
        (Status.PUBLISHED, False, False),
    ],
)
def test_view_on_site_points_to_preview_until_public(kind, client, editor, status, future, expects_preview):
    fields = {"published_at": timezone.now() + datetime.timedelta(days=1)} if future else {}
    obj = make(kind, status, **fields)
    client.force_login(editor)
    response = client.get(change_url(kind, obj))
    preview = reverse(f"{'digests' if kind == 'digest' else 'blog'}:preview", args=[obj.pk])
    expected = preview if expects_preview else obj.get_absolute_url()
    assert response.context["absolute_url"] == expected
    assert f'href="{expected}"' in response.content.decode()
    assert client.get(expected).status_code == 200


# --- the groups the migration creates ---------------------------------------------------------


def test_migration_creates_editors_and_publishers():
    from django.contrib.auth.models import Group

    def codenames(name: str) -> set[str]:
        return set(Group.objects.get(name=name).permissions.values_list("codename", flat=True))

    editors, publishers = codenames("Editors"), codenames("Publishers")
    assert {"add_digest", "change_digest", "add_post", "change_post", "add_topic", "add_tag"} <= editors
    assert not {"publish_digest", "publish_post", "delete_digest", "delete_post"} & editors
    assert editors < publishers
    assert {"publish_digest", "publish_post", "delete_digest", "delete_post"} <= publishers


def test_a_post_needs_at_least_one_author(client, editor, admin_form_data):
    client.force_login(editor)
    url = reverse("admin:blog_post_add")
    data = admin_form_data(client.get(url), title="Nobody wrote this", slug="nobody", body="Text", status=Status.DRAFT)
    response = client.post(url, data)
    assert response.status_code == 200
    assert not Post.objects.filter(slug="nobody").exists()
