"""The Celery tasks' own logic, run in this process with apply() (the broker is tested in test_celery)."""
import datetime

import pytest
from django.core.cache import cache

from digests.factories import ReferenceFactory, RepositoryFactory, TopicFactory
from digests.models import Digest, Reference
from ingestion.models import FeedSource, IngestionRun, TrackedRepository
from ingestion.polling import token_fingerprint
from ingestion.tasks import draft_digest_task, fetch_feed, poll_repository

from .replay import base_url
from .test_feeds import atom
from .test_polling import serve_everything

pytestmark = pytest.mark.django_db


def test_poll_repository_syncs_and_releases_the_token_lock(httpserver, settings):
    settings.GITHUB_API_URL = base_url(httpserver)
    tracked = TrackedRepository.objects.create(repository=RepositoryFactory(full_name="PyGithub/PyGithub"))
    serve_everything(httpserver)
    result = poll_repository.apply(args=[tracked.pk, "2012-03-15T00:00:00+00:00"], throw=True)
    assert result.get().endswith("0 updated, 0 unchanged")
    assert Reference.objects.filter(repository=tracked.repository).count() > 0
    assert cache.get(f"ingestion:github-token:{token_fingerprint(settings.GITHUB_TOKEN)}") is None


def test_poll_of_a_removed_repository_is_a_no_op():
    assert poll_repository.apply(args=[987654], throw=True).get() == "gone"
    assert not IngestionRun.objects.exists()


def test_draft_digest_task(db):
    topic = TopicFactory(slug="pytorch")
    ReferenceFactory(repository=RepositoryFactory(topic=topic),
                     merged_at=datetime.datetime(2026, 6, 29, 9, tzinfo=datetime.UTC))
    summary = draft_digest_task.apply(args=[topic.pk, "2026-06-29"], throw=True).get()
    assert summary.startswith("Created draft")
    assert Digest.objects.get().date == datetime.date(2026, 6, 29)


def test_fetch_feed_task(httpserver):
    httpserver.expect_request("/feed").respond_with_data(atom(), content_type="application/atom+xml")
    source = FeedSource.objects.create(url=httpserver.url_for("/feed"))
    assert fetch_feed.apply(args=[source.pk], throw=True).get() == "2 created, 0 updated, 0 unchanged"
