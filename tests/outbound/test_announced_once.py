"""``*.published`` once in an item's life (issue 39): when it is published, or at its scheduled time.

Every later change of what it shows is ``*.updated``, also to an endpoint that never heard of the
item before: a subscriber posting "new digest" to a channel must not re-announce a months-old
digest because a reference it cites was retitled, nor every item of the last day because the
endpoint was created just now.
"""
from datetime import timedelta

import pytest
from django.core.management import call_command
from django.utils import timezone

from blog.factories import AuthorFactory, PostFactory
from digests.factories import DigestFactory, DigestReferenceFactory
from digests.models import Digest
from outbound import delivery, outbox
from outbound.models import Endpoint, Message

pytestmark = pytest.mark.django_db


def said() -> list[tuple[str, int]]:
    return list(Message.objects.order_by("pk").values_list("type", "subject_id"))


def test_retitling_a_reference_of_a_digest_published_days_ago_is_an_update_to_a_new_endpoint(
        receiver, queued, django_capture_on_commit_callbacks):
    """The issue's steps: the demo content, a new endpoint, a cited reference retitled."""
    call_command("import_seeds", verbosity=0)
    endpoint = Endpoint.objects.create(url=receiver.url, description="posts new digests to a channel")
    digest = Digest.objects.published().order_by("published_at").first()
    assert digest.published_at < timezone.now() - timedelta(days=2)
    reference = digest.references.order_by("pk").first()
    with django_capture_on_commit_callbacks(execute=True):
        reference.title = f"{reference.title} (retitled)"
        reference.save()
    assert said() == [("digest.updated", digest.pk)]
    assert delivery.deliver_due(endpoint.pk) == 1
    [payload] = receiver.verified(endpoint.whsec)
    assert payload["type"] == "digest.updated" and "(retitled)" in str(payload["data"]["references"])
    assert outbox.announce_due() == 0 and len(said()) == 1


def test_an_endpoint_created_after_a_publication_hears_updates_only(queued, receiver,
                                                                   django_capture_on_commit_callbacks):
    ada = AuthorFactory(name="Ada")
    post = PostFactory(authors=[ada], published_at=timezone.now() - timedelta(hours=1))
    Endpoint.objects.create(url=receiver.url)
    assert outbox.announce_due() == 0  # published an hour ago, before anyone listened: not news now
    with django_capture_on_commit_callbacks(execute=True):
        ada.name = "Ada Lovelace"
        ada.save()
    assert said() == [("post.updated", post.pk)]
    with django_capture_on_commit_callbacks(execute=True):
        post.title = "A new title"
        post.save()
    assert said() == [("post.updated", post.pk)] * 2


def test_a_scheduled_digest_changed_after_its_time_but_before_the_sweep_is_published_once(
        endpoint, queued, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        digest = DigestFactory(published_at=timezone.now() + timedelta(hours=1))
    assert said() == []
    Digest.objects.filter(pk=digest.pk).update(published_at=timezone.now())  # its time came
    with django_capture_on_commit_callbacks(execute=True):
        DigestReferenceFactory(digest=digest)  # a citation added before the sweep noticed
    assert said() == [("digest.published", digest.pk)]
    assert outbox.announce_due() == 0
    with django_capture_on_commit_callbacks(execute=True):
        DigestReferenceFactory(digest=digest)
    assert said() == [("digest.published", digest.pk), ("digest.updated", digest.pk)]


def test_saving_a_draft_as_published_is_a_publication_and_withdrawn_then_back_is_one_again(
        endpoint, queued, django_capture_on_commit_callbacks):
    from publishing.workflow import Status

    with django_capture_on_commit_callbacks(execute=True):
        post = PostFactory(status=Status.DRAFT, published_at=timezone.now() - timedelta(days=30))
    with django_capture_on_commit_callbacks(execute=True):
        post.status = Status.PUBLISHED  # back-dated, but published now
        post.save()
    with django_capture_on_commit_callbacks(execute=True):
        post.status = Status.DRAFT
        post.save()
    with django_capture_on_commit_callbacks(execute=True):
        post.status = Status.PUBLISHED
        post.save()
    assert [kind for kind, _ in said()] == ["post.published", "post.unpublished", "post.published"]
