"""Content for the newsroom's sections, made as the workflow would have recorded it."""
import datetime
import itertools

import pytest
from django.utils import timezone

from blog.factories import PostFactory
from digests.factories import DigestFactory, ReferenceFactory, RepositoryFactory, TopicFactory
from edge.models import Purge
from ingestion.models import DigestDraft, FeedSource, WebhookDelivery
from newsletters.models import Delivery, Message
from outbound.models import Endpoint
from publishing.workflow import Status

_serial = itertools.count()


def in_review(kind: str, submitter, hours_ago: float, **fields):
    """A post or digest submitted for review by `submitter` `hours_ago` hours ago."""
    factory = PostFactory if kind == "post" else DigestFactory
    at = timezone.now() - datetime.timedelta(hours=hours_ago)
    return factory(status=Status.IN_REVIEW, published_at=None, status_changed_at=at, status_changed_by=submitter,
                   **fields)


def draft(kind: str, **fields):
    factory = PostFactory if kind == "post" else DigestFactory
    return factory(status=Status.DRAFT, published_at=None, **fields)


def scheduled(kind: str, hours_ahead: float, **fields):
    factory = PostFactory if kind == "post" else DigestFactory
    return factory(status=Status.PUBLISHED, published_at=timezone.now() + datetime.timedelta(hours=hours_ahead),
                   **fields)


def drafted_digest(topic, generated_hours_ago: float = 1):
    digest = DigestFactory(topic=topic, status=Status.DRAFT, published_at=None)
    at = timezone.now() - datetime.timedelta(hours=generated_hours_ago)
    return DigestDraft.objects.create(digest=digest, generated_at=at)


def failures(count: int) -> None:
    """`count` rows of each thing Needs attention counts (and one healthy row of each, not counted)."""
    for _ in range(count):
        n = next(_serial)
        WebhookDelivery.objects.create(guid=f"failed-{n}", event="push", body=b"{}", state="failed")
        FeedSource.objects.create(url=f"https://feeds.example.org/{n}.xml", failures=2)
        Endpoint.objects.create(url=f"https://hooks.example.org/{n}", failing_since=timezone.now())
        Endpoint.objects.create(url=f"https://off.example.org/{n}", enabled=False, disabled_reason="410 Gone")
        Purge.objects.create(keys=[f"post-{n}"], attempts=3, last_error="node down")
        DigestDraft.objects.create(digest=DigestFactory(status=Status.DRAFT, published_at=None), writer="fallback",
                                   writer_reason="the model failed: no usable answer in 3 attempts")
    n = next(_serial)
    WebhookDelivery.objects.create(guid=f"fine-{n}", event="push", body=b"{}", state="processed")
    FeedSource.objects.create(url=f"https://feeds.example.org/fine-{n}.xml")
    Endpoint.objects.create(url=f"https://hooks.example.org/fine-{n}")
    Purge.objects.create(keys=[f"post-fine-{n}"])
    DigestDraft.objects.create(digest=DigestFactory(status=Status.DRAFT, published_at=None), writer="model")


def newsletter(states: dict[str, int], days_ago: float = 0, **fields) -> Message:
    """A message created `days_ago` with `states[state]` deliveries in each state (editors' tests: no subscriber)."""
    n = next(_serial)
    message = Message.objects.create(subject=fields.pop("subject", f"Newsletter {n}"), url=f"https://example.org/{n}",
                                     created_at=timezone.now() - datetime.timedelta(days=days_ago), **fields)
    Delivery.objects.bulk_create([Delivery(message=message, email=f"r{n}-{i}-{state}@example.org", state=state)
                                  for state, number in states.items() for i in range(number)])
    return message


def populate(count: int, user, submitter) -> None:
    """`count` rows in every section for `user` (a mix of posts and digests), and failures to attend to."""
    topic = TopicFactory()
    repository = RepositoryFactory(topic=topic)
    for n in range(count):
        kind = ("post", "digest")[n % 2]
        in_review(kind, submitter, hours_ago=n + 1)
        scheduled(kind, hours_ahead=n + 1)
        draft(kind, created_by=user, edited_by=user)
        drafted_digest(topic)
        newsletter({"queued": 2, "sent": 1} if n % 2 else {"sent": 2, "failed": 1})
    ReferenceFactory.create_batch(2, repository=repository)
    failures(count)


@pytest.fixture
def superuser(django_user_model):
    return django_user_model.objects.create_superuser("chief", "chief@example.org", "pw")


@pytest.fixture
def roles(editor, publisher, superuser):
    return {"editor": editor, "publisher": publisher, "superuser": superuser}
