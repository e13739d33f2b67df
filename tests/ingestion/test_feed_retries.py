"""A feed that fails is retried by the sweep with backoff, and its error shows in the admin."""
import datetime

import pytest
from django.utils import timezone

from blog.models import Post
from ingestion import tasks
from ingestion.models import FeedSource

from .test_feeds import atom

pytestmark = pytest.mark.django_db

FEED = "/feeds/flaky.xml"


@pytest.fixture
def run_in_process(monkeypatch):
    """The sweep's queued fetches run here, as a worker would run them (the broker is tested in test_celery)."""
    monkeypatch.setattr(tasks, "queue_fetch", lambda source_id: tasks.fetch_feed.apply(args=[source_id], throw=True))


def test_a_failing_feed_is_retried_with_backoff_until_it_succeeds(httpserver, run_in_process):
    source = FeedSource.objects.create(url=httpserver.url_for(FEED))
    httpserver.expect_ordered_request(FEED).respond_with_data("down for maintenance", status=503)
    httpserver.expect_ordered_request(FEED).respond_with_data(atom(), content_type="application/atom+xml")

    before = timezone.now()
    assert tasks.fetch_due_feeds() == 1  # never fetched: due
    source.refresh_from_db()
    assert source.failures == 1 and "HTTP 503" in source.last_error
    assert before + FeedSource.RETRY_BASE <= source.next_attempt_at <= timezone.now() + FeedSource.RETRY_BASE
    assert not Post.objects.exists()

    assert tasks.fetch_due_feeds() == 0  # waiting for its retry: the sweep leaves it alone
    assert len(httpserver.log) == 1

    FeedSource.objects.filter(pk=source.pk).update(next_attempt_at=timezone.now() - datetime.timedelta(seconds=1))
    assert tasks.fetch_due_feeds() == 1  # the retry is due
    httpserver.check_assertions()
    source.refresh_from_db()
    assert (source.failures, source.last_error, source.last_error_at) == (0, "", None)  # reset on success
    assert source.next_attempt_at >= timezone.now() + FeedSource.FETCH_INTERVAL - datetime.timedelta(minutes=1)
    assert Post.objects.count() == 2
    assert tasks.fetch_due_feeds() == 0


def test_retry_delay_doubles_per_consecutive_failure_up_to_the_cap():
    source = FeedSource.objects.create(url="https://example.org/feed")
    now = timezone.now()
    delays = []
    for _ in range(12):
        source.record_failure("HTTP 500", now=now)
        delays.append(source.next_attempt_at - now)
    minutes = [delay / datetime.timedelta(minutes=1) for delay in delays]
    assert minutes[:5] == [5, 10, 20, 40, 80]
    assert max(delays) == FeedSource.RETRY_CAP and delays[-1] == FeedSource.RETRY_CAP
    assert delays == sorted(delays)
    assert not FeedSource.objects.due(now + delays[-1] - datetime.timedelta(seconds=1)).exists()
    assert FeedSource.objects.due(now + delays[-1]).exists()


def test_disabled_feeds_are_never_due():
    FeedSource.objects.create(url="https://example.org/feed", enabled=False)
    assert not FeedSource.objects.due().exists()


def test_the_admin_shows_the_last_error(httpserver, admin_client):
    source = FeedSource.objects.create(url=httpserver.url_for(FEED))
    httpserver.expect_request(FEED).respond_with_data("<html>not a feed</html>", content_type="text/html")
    assert tasks.fetch_feed.apply(args=[source.pk], throw=True).get().startswith("failed:")
    listing = admin_client.get("/admin/ingestion/feedsource/").content.decode()
    assert "not a feed" in listing
    page = admin_client.get(f"/admin/ingestion/feedsource/{source.pk}/change/").content.decode()
    assert "not a feed" in page and "Fetches failed in a row" in page


def test_a_fetch_lost_with_its_worker_is_queued_again_after_the_claim_not_the_hour(monkeypatch):
    """The sweep claims the feed and queues its fetch; the worker dies with it. Within the claim the
    next sweeps leave it alone, after it the feed is queued again (it used to wait FETCH_INTERVAL)."""
    queued = []
    monkeypatch.setattr(tasks, "queue_fetch", queued.append)  # the fetch never runs: lost
    source = FeedSource.objects.create(url="https://example.org/feed")
    assert tasks.fetch_due_feeds() == 1
    assert tasks.fetch_due_feeds() == 0
    source.refresh_from_db()
    assert source.next_attempt_at <= timezone.now() + FeedSource.FETCH_CLAIM < timezone.now() + FeedSource.FETCH_INTERVAL
    FeedSource.objects.filter(pk=source.pk).update(next_attempt_at=timezone.now() - datetime.timedelta(seconds=1))
    assert tasks.fetch_due_feeds() == 1
    assert queued == [source.pk, source.pk]
