"""Failed GitHub deliveries asked for again through the hook-deliveries API, against a GitHub that really resends.

The fake (tests/faults/github_fake.py) speaks the documented contract: list a
hook's deliveries newest first with cursor pagination in ``Link``, and on
``POST .../attempts`` send the delivery again (same GUID, signed) to our
endpoint, served by ``live_server``.
"""
import django.contrib.auth.middleware  # noqa: F401  imported while auth is installed (see test_celery)
import pytest
from celery._state import _set_task_join_will_block
from django.db import OperationalError, connection

from ingestion import redelivery
from ingestion.deliveries import process_delivery
from ingestion.github import GitHubClient
from ingestion.models import IngestionRun, RedeliveryRequest, WebhookDelivery
from ingestion.tasks import redeliver_failed_deliveries
from tests.faults.github_fake import FakeGitHub

from .conftest import HELLO_WORLD, SECRET, fixture_body

pytestmark = pytest.mark.django_db(transaction=True,
                                   available_apps=["digests", "blog", "ingestion", "taggit", "reversion"])
HOOK_ID = 42


@pytest.fixture
def endpoint_down_for(monkeypatch):
    """GUIDs for which storing fails as if the database were down (the endpoint answers 503)."""
    down: set[str] = set()
    insert_new = WebhookDelivery.objects.insert_new

    def maybe_down(**values):
        if values["guid"] in down:
            raise OperationalError("the database is down")
        return insert_new(**values)

    monkeypatch.setattr(WebhookDelivery.objects, "insert_new", maybe_down)
    return down


@pytest.fixture
def github(httpserver, live_server, webhook_secret, tracked):
    tracked.hook_id = HOOK_ID
    tracked.save()
    fake = FakeGitHub(httpserver, repo=HELLO_WORLD, hook_id=HOOK_ID, target=f"{live_server.url}/webhooks/github",
                      secret=SECRET, page_size=3, hold_redeliveries=connection.vendor == "sqlite")
    yield fake
    fake.wait_for_redeliveries()  # none may reach the live server after the test's data is flushed
    # Eager tasks run at once in two threads here (the test's and live_server's); Celery keeps
    # "may a task join a result" in one process-wide flag that each eager run sets and restores,
    # so interleaved runs can leave it set. Clear it so later tests may call .get() on results.
    _set_task_join_will_block(False)


@pytest.fixture
def client_for(httpserver):
    sleeps: list[float] = []
    client = GitHubClient(httpserver.url_for("/"), "token", sleep=sleeps.append)
    client.sleeps = sleeps
    return client


def send_mixed(github, endpoint_down_for):
    """8 deliveries: 3 refused with 503, 2 to nowhere, 3 through; one refused one later got through by hand."""
    body = fixture_body("issues.opened")
    endpoint_down_for.update({"down-1", "down-2", "down-3"})
    for guid in ("ok-1", "down-1", "ok-2", "down-2", "down-3", "ok-3"):
        assert github.send("issues", body, guid).status_code == (503 if guid.startswith("down") else 202)
    target, github.target = github.target, "http://127.0.0.1:9/webhooks/github"  # nothing listens on port 9
    github.send("issues", body, "lost-1")
    github.send("issues", body, "lost-2")
    github.target = target
    endpoint_down_for.discard("down-3")
    assert github.send("issues", body, "down-3", redelivery=True).status_code == 202  # someone pressed Redeliver
    endpoint_down_for.clear()


def processed_once(guids) -> dict[str, int]:
    for delivery in WebhookDelivery.objects.filter(state="pending"):
        process_delivery(delivery.pk)  # inline Celery already did; with a broker and no worker, do it here
    return {guid: IngestionRun.objects.filter(source="webhook", subject=guid).count() for guid in guids}


def test_failed_deliveries_are_requested_once_and_arrive_once(github, client_for, endpoint_down_for):
    send_mixed(github, endpoint_down_for)
    assert github.failed_guids() == {"down-1", "down-2", "lost-1", "lost-2"}

    counts = redelivery.redeliver_failed(github_tracked(), client_for)
    github.wait_for_redeliveries()

    assert (counts.created, counts.unchanged) == (4, 0)
    requested = {a.guid for a in github.attempts if a.id in github.redelivery_requests}
    assert requested == {"down-1", "down-2", "lost-1", "lost-2"}
    assert github.failed_guids() == set()
    every = ["ok-1", "ok-2", "ok-3", "down-1", "down-2", "down-3", "lost-1", "lost-2"]
    assert processed_once(every) == {guid: 1 for guid in every}
    assert sorted(RedeliveryRequest.objects.values_list("guid", flat=True)) == sorted(requested)
    run = IngestionRun.objects.get(source="redelivery")
    assert (run.status, run.created, run.subject) == ("succeeded", 4, f"{HELLO_WORLD} hook {HOOK_ID}")

    again = redelivery.redeliver_failed(github_tracked(), client_for)
    assert (again.created, len(github.redelivery_requests)) == (0, 4)  # all stored now: nothing asked


def test_a_delivery_failing_again_is_not_asked_twice_within_the_window(github, client_for, endpoint_down_for,
                                                                        settings):
    endpoint_down_for.add("still-down")
    github.send("issues", fixture_body("issues.opened"), "still-down")
    redelivery.redeliver_failed(github_tracked(), client_for)
    github.wait_for_redeliveries()
    assert [a.status_code for a in github.attempts] == [503, 503]  # GitHub resent; we were still down

    redelivery.redeliver_failed(github_tracked(), client_for)
    assert len(github.redelivery_requests) == 1
    settings.INGESTION_REDELIVERY_WINDOW = 0  # the window has passed
    endpoint_down_for.clear()
    redelivery.redeliver_failed(github_tracked(), client_for)
    github.wait_for_redeliveries()
    assert len(github.redelivery_requests) == 2
    assert processed_once(["still-down"]) == {"still-down": 1}


def test_rate_limit_is_waited_out_as_for_polls(github, client_for, endpoint_down_for):
    endpoint_down_for.add("limited")
    github.send("issues", fixture_body("issues.opened"), "limited")
    endpoint_down_for.clear()
    github.rate_limited_once = True
    counts = redelivery.redeliver_failed(github_tracked(), client_for)
    assert client_for.sleeps == [7.0]  # Retry-After
    assert counts.created == 1
    github.wait_for_redeliveries()
    assert processed_once(["limited"]) == {"limited": 1}


def test_the_beat_task_covers_tracked_repositories_with_a_hook_id(github, endpoint_down_for, settings, httpserver):
    settings.GITHUB_API_URL = httpserver.url_for("/").rstrip("/")
    endpoint_down_for.add("beat")
    github.send("issues", fixture_body("issues.opened"), "beat")
    endpoint_down_for.clear()
    result = redeliver_failed_deliveries.apply()  # not .get(): see the github fixture on the shared flag
    assert result.successful() and result.result == "1 created, 0 updated, 0 unchanged"
    github.wait_for_redeliveries()
    assert processed_once(["beat"]) == {"beat": 1}


def github_tracked():
    from ingestion.models import TrackedRepository

    return TrackedRepository.objects.select_related("repository").get(hook_id=HOOK_ID)
