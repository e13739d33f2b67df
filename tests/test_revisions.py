"""Revision history (django-reversion): who changed what and when, and rollback incl. inlines."""
import pytest
from django.contrib.admin.helpers import ACTION_CHECKBOX_NAME
from django.urls import reverse
from reversion.models import Version
from taggit.models import Tag

from blog.factories import AuthorFactory, PostFactory
from blog.models import Post, PostAuthor
from digests.factories import DigestFactory, DigestReferenceFactory, ReferenceFactory, TopicFactory
from digests.models import ActionItem, Digest, DigestReference
from publishing.workflow import Status

pytestmark = pytest.mark.django_db


def digest_state(digest: Digest) -> tuple:
    digest = Digest.objects.get(pk=digest.pk)
    return (
        digest.headline,
        list(digest.digest_references.values_list("number", "reference_id")),
        list(digest.action_items.values_list("text", "priority")),
    )


@pytest.fixture
def edited_digest(client, editor, admin_form_data):
    """A digest created and then changed by an editor through the admin: two versions."""
    first_reference, second_reference = ReferenceFactory(), ReferenceFactory()
    client.force_login(editor)
    add = reverse("admin:digests_digest_add")
    data = admin_form_data(
        client.get(add),
        topic=TopicFactory().pk, date="2026-06-29", headline="First headline", slug="first",
        summary="Cites [1].", status=Status.DRAFT,
        **{
            "digest_references-0-number": "1",
            "digest_references-0-reference": str(first_reference.pk),
            "action_items-0-text": "Do A",
            "action_items-0-priority": "plan",
        },
    )
    assert client.post(add, data).status_code == 302
    digest = Digest.objects.get(slug="first")
    change = reverse("admin:digests_digest_change", args=[digest.pk])
    data = admin_form_data(
        client.get(change),
        headline="Second headline", summary="Cites [1] and [ref:2].",
        **{
            "action_items-0-text": "Do B",
            "action_items-0-priority": "immediate",
            "digest_references-1-number": "2",
            "digest_references-1-reference": str(second_reference.pk),
        },
    )
    assert client.post(change, data).status_code == 302
    assert digest_state(digest) == (
        "Second headline", [(1, first_reference.pk), (2, second_reference.pk)], [("Do B", "immediate")]
    )
    digest.first_reference = first_reference
    return digest


def test_admin_saves_record_versions_with_the_user(edited_digest, editor):
    versions = Version.objects.get_for_object(edited_digest)
    assert versions.count() == 2
    latest, first = versions
    assert (latest.revision.user, first.revision.user) == (editor, editor)
    assert first.field_dict["headline"] == "First headline"
    assert latest.field_dict["headline"] == "Second headline"
    assert "Changed" in latest.revision.get_comment() or "Headline" in latest.revision.get_comment()
    # The revision holds the inlines too, so a rollback can restore them.
    inline_models = {version.content_type.model_class() for version in first.revision.version_set.all()}
    assert {Digest, DigestReference, ActionItem} <= inline_models


def test_history_page_shows_who_and_when(client, edited_digest, editor):
    client.force_login(editor)
    response = client.get(reverse("admin:digests_digest_history", args=[edited_digest.pk]))
    assert response.status_code == 200
    actions = response.context["action_list"]
    assert [action["revision"].user for action in actions] == [editor, editor]
    page = " ".join(response.content.decode().split())
    assert page.count("<td> editor </td>") == 2
    assert "Changed Headline" in page  # what changed, from the admin's change message
    for action in actions:
        assert f'href="{action["url"]}"' in page


def test_revision_page_shows_the_old_version_without_changing_anything(client, edited_digest, editor):
    first = Version.objects.get_for_object(edited_digest).last()
    client.force_login(editor)
    response = client.get(reverse("admin:digests_digest_revision", args=[edited_digest.pk, first.pk]))
    assert response.status_code == 200
    assert response.context["adminform"].form["headline"].value() == "First headline"
    assert digest_state(edited_digest)[0] == "Second headline"
    assert DigestReference.objects.filter(digest=edited_digest).count() == 2


def test_rollback_restores_headline_and_inlines(client, edited_digest, editor, admin_form_data):
    first = Version.objects.get_for_object(edited_digest).last()
    revision_url = reverse("admin:digests_digest_revision", args=[edited_digest.pk, first.pk])
    client.force_login(editor)
    response = client.post(revision_url, admin_form_data(client.get(revision_url)))
    assert response.status_code == 302, response.context and response.context["errors"]
    assert digest_state(edited_digest) == (
        "First headline", [(1, edited_digest.first_reference.pk)], [("Do A", "plan")]
    )
    versions = Version.objects.get_for_object(edited_digest)
    assert versions.count() == 3
    assert versions.first().revision.user == editor
    assert "Reverted" in versions.first().revision.get_comment()


def test_editor_cannot_roll_back_a_published_digest(client, edited_digest, editor, publisher, admin_form_data):
    """An older draft version must not become a back door for un-publishing."""
    first = Version.objects.get_for_object(edited_digest).last()
    revision_url = reverse("admin:digests_digest_revision", args=[edited_digest.pk, first.pk])
    client.force_login(editor)
    data = admin_form_data(client.get(revision_url))
    Digest.objects.get(pk=edited_digest.pk).transition(publisher, Status.PUBLISHED)
    assert client.get(revision_url).status_code == 403
    assert client.post(revision_url, data).status_code == 403
    fresh = Digest.objects.get(pk=edited_digest.pk)
    assert (fresh.status, fresh.headline) == (Status.PUBLISHED, "Second headline")

    client.force_login(publisher)
    assert client.post(revision_url, admin_form_data(client.get(revision_url))).status_code == 302
    assert Digest.objects.get(pk=edited_digest.pk).headline == "First headline"


def test_editor_cannot_restore_a_published_version_over_a_draft(client, editor, publisher, admin_form_data):
    digest = DigestFactory(status=Status.IN_REVIEW, published_at=None, summary="Nothing cited.")
    client.force_login(publisher)
    change = reverse("admin:digests_digest_change", args=[digest.pk])
    assert client.post(change, admin_form_data(client.get(change), status=Status.PUBLISHED)).status_code == 302
    assert client.post(change, admin_form_data(client.get(change), status=Status.DRAFT)).status_code == 302
    published_version = Version.objects.get_for_object(digest)[1]
    assert published_version.field_dict["status"] == Status.PUBLISHED
    revision_url = reverse("admin:digests_digest_revision", args=[digest.pk, published_version.pk])
    client.force_login(editor)
    page = client.get(revision_url)
    assert page.status_code == 200 and page.context["has_change_permission"] is False  # shown read-only
    data = admin_form_data(page) | {"status": Status.PUBLISHED, "headline": digest.headline, "summary": "x"}
    assert client.post(revision_url, data).status_code == 403
    assert Digest.objects.get(pk=digest.pk).status == Status.DRAFT


def test_bulk_actions_record_a_version_with_the_user(client, publisher):
    digest = DigestFactory(status=Status.IN_REVIEW, published_at=None)
    client.force_login(publisher)
    client.post(
        reverse("admin:digests_digest_changelist"), {"action": "publish", ACTION_CHECKBOX_NAME: [str(digest.pk)]}
    )
    version = Version.objects.get_for_object(digest).get()
    assert version.revision.user == publisher
    assert version.field_dict["status"] == Status.PUBLISHED
    assert "Published via bulk action." in version.revision.get_comment()


def test_post_history_and_rollback_restores_authors(client, editor, admin_form_data):
    ada, grace = AuthorFactory(name="Ada"), AuthorFactory(name="Grace")
    post = PostFactory(status=Status.DRAFT, published_at=None, title="Old title", authors=[ada], tags=["dynamo"])
    inductor = Tag.objects.create(name="inductor", slug="inductor")
    change = reverse("admin:blog_post_change", args=[post.pk])
    client.force_login(editor)
    assert client.post(change, admin_form_data(client.get(change))).status_code == 302  # first version
    data = admin_form_data(
        client.get(change),
        title="New title",
        **{"post_authors-0-author": str(grace.pk), "tagged_items-0-tag": str(inductor.pk)},
    )
    assert client.post(change, data).status_code == 302
    changed = Post.objects.get(pk=post.pk)
    assert (changed.title, changed.ordered_authors(), list(changed.tags.names())) == ("New title", [grace], ["inductor"])
    versions = Version.objects.get_for_object(post)
    assert [v.revision.user for v in versions] == [editor, editor]
    assert client.get(reverse("admin:blog_post_history", args=[post.pk])).status_code == 200

    revision_url = reverse("admin:blog_post_revision", args=[post.pk, versions.last().pk])
    response = client.get(revision_url)
    assert response.status_code == 200
    assert client.post(revision_url, admin_form_data(response)).status_code == 302
    restored = Post.objects.get(pk=post.pk)
    assert (restored.title, restored.ordered_authors(), list(restored.tags.names())) == ("Old title", [ada], ["dynamo"])
    assert PostAuthor.objects.filter(post=post).count() == 1
