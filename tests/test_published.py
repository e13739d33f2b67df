"""published(): the only way public code reaches content.

Only items whose status is published *and* whose published_at has passed are
returned, and "passed" is decided when the query is made -- a scheduled item
goes live on time with no job running and nothing saved.
"""
import datetime

import pytest
from django.utils import timezone

from blog.factories import PostFactory
from blog.models import Post
from digests.factories import DigestFactory
from digests.models import Digest
from publishing.workflow import Status

pytestmark = pytest.mark.django_db

HOUR = datetime.timedelta(hours=1)


@pytest.fixture(params=[(Digest, DigestFactory), (Post, PostFactory)], ids=["digest", "post"])
def model_and_factory(request):
    return request.param


@pytest.fixture
def clock(monkeypatch):
    """A controllable "now": the real time, shifted by whatever the test moves it."""
    real_now = timezone.now
    offset = [datetime.timedelta(0)]
    monkeypatch.setattr(timezone, "now", lambda: real_now() + offset[0])

    def advance(delta: datetime.timedelta) -> None:
        offset[0] += delta

    return advance


def one_of_each(factory) -> dict:
    now = timezone.now()
    return {
        "draft": factory(status=Status.DRAFT, published_at=None),
        "draft_with_past_time": factory(status=Status.DRAFT, published_at=now - HOUR),
        "in_review": factory(status=Status.IN_REVIEW, published_at=None),
        "in_review_with_past_time": factory(status=Status.IN_REVIEW, published_at=now - HOUR),
        "published_past": factory(status=Status.PUBLISHED, published_at=now - HOUR),
        "published_long_ago": factory(status=Status.PUBLISHED, published_at=now - 400 * 24 * HOUR),
        "scheduled": factory(status=Status.PUBLISHED, published_at=now + HOUR),
        "archived": factory(status=Status.ARCHIVED, published_at=now - HOUR),
    }


def test_only_published_past_items_are_returned(model_and_factory):
    model, factory = model_and_factory
    items = one_of_each(factory)
    visible = set(model.objects.published().values_list("pk", flat=True))
    assert visible == {items["published_past"].pk, items["published_long_ago"].pk}
    assert model.objects.count() == len(items)


def test_each_state_through_its_public_url(model_and_factory, client):
    _, factory = model_and_factory
    items = one_of_each(factory)
    codes = {name: client.get(obj.get_absolute_url()).status_code for name, obj in items.items()}
    assert codes == {name: 200 if name.startswith("published_") else 404 for name in items}


def test_scheduled_item_goes_live_when_its_time_comes(model_and_factory, clock, client):
    model, factory = model_and_factory
    scheduled = factory(status=Status.PUBLISHED, published_at=timezone.now() + 2 * HOUR)
    assert not model.objects.published().exists()
    assert scheduled.is_scheduled and not scheduled.is_published
    assert client.get(scheduled.get_absolute_url()).status_code == 404

    clock(HOUR)
    assert not model.objects.published().exists()

    clock(HOUR + datetime.timedelta(seconds=1))  # nothing saved, no job run: only time moved
    assert list(model.objects.published()) == [scheduled]
    assert scheduled.is_published and not scheduled.is_scheduled
    assert client.get(scheduled.get_absolute_url()).status_code == 200


def test_boundary_is_inclusive(model_and_factory, monkeypatch):
    model, factory = model_and_factory
    instant = timezone.now()
    item = factory(status=Status.PUBLISHED, published_at=instant)
    monkeypatch.setattr(timezone, "now", lambda: instant)
    assert list(model.objects.published()) == [item]
    monkeypatch.setattr(timezone, "now", lambda: instant - datetime.timedelta(microseconds=1))
    assert not model.objects.published().exists()


def test_scheduled_item_goes_live_in_real_time(model_and_factory):
    """No clock tricks: a published_at a moment ahead becomes visible once the moment passes."""
    model, factory = model_and_factory
    item = factory(status=Status.PUBLISHED, published_at=timezone.now() + datetime.timedelta(days=1))
    # The moment is set after the factory's work (a post draws its card: seconds on a loaded machine).
    model.objects.filter(pk=item.pk).update(published_at=timezone.now() + datetime.timedelta(milliseconds=500))
    assert not model.objects.published().exists()
    deadline = timezone.now() + datetime.timedelta(seconds=5)
    while not model.objects.published().exists() and timezone.now() < deadline:
        pass
    assert list(model.objects.published()) == [item]


def test_published_chains_with_other_filters(model_and_factory):
    model, factory = model_and_factory
    items = one_of_each(factory)
    newest = items["published_past"]
    assert list(model.objects.published().filter(pk__in=[obj.pk for obj in items.values()]).order_by("-published_at")[:1]) == [newest]
    assert list(model.objects.filter(pk=newest.pk).published()) == [newest]
    assert not model.objects.filter(pk=items["scheduled"].pk).published().exists()


def test_related_managers_offer_published(client):
    digest = DigestFactory(status=Status.PUBLISHED)
    DigestFactory(topic=digest.topic, status=Status.DRAFT, published_at=None)
    assert list(digest.topic.digests.published()) == [digest]
