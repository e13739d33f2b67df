"""Deliveries through a real Celery worker and the real Redis broker, including a broker outage."""
import os
import socket
import time
from contextlib import contextmanager

import django.contrib.auth.middleware  # noqa: F401  imported while auth is installed; see pytestmark
import pytest
from celery.contrib.testing.worker import start_worker

from digests.models import Reference
from ingestion.models import IngestionRun, WebhookDelivery
from ingestion.tasks import DELIVERY_WORK, process_delivery_task, sweep_deliveries
from publishing import queues
from repojournal.celery import app

from .conftest import fixture_payload

pytestmark = [
    pytest.mark.skipif(
        not os.environ.get("REDIS_URL"),
        reason="needs a real Redis broker and worker: set REDIS_URL (the PostgreSQL+Redis CI run does)",
    ),
    # The worker thread must see committed rows, so these tests commit and are flushed afterwards.
    # Limiting the flush to these apps keeps auth and contenttypes (the editorial groups made by a
    # data migration) intact for the rest of the suite; serialized_rollback clashes with other
    # transactional tests that re-create content types. While a test runs only these apps are
    # installed, hence the early import of the auth middleware the test client loads.
    pytest.mark.django_db(transaction=True, available_apps=["digests", "blog", "ingestion", "taggit", "reversion"]),
]

WAIT_SECONDS = 20


def merged_pull_request() -> dict:
    payload = fixture_payload("pull_request.closed")
    payload["pull_request"].update(merged=True, merged_at="2019-05-15T15:21:18Z")
    return payload


def wait_for(condition, timeout: float = WAIT_SECONDS):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.1)
    pytest.fail(f"condition not met within {timeout} s")


def queue_length() -> int:
    with app.connection_for_write() as connection:
        return connection.default_channel.client.llen(app.conf.task_default_queue)


def wait_until_idle():
    """Until the queue is empty and the worker has finished what it took."""
    wait_for(lambda: queue_length() == 0)
    time.sleep(1.0)


def _reset_producer_pool():
    app._pool = None
    app.amqp._producer_pool = None


@contextmanager
def broker_unreachable():
    """Point the producer at a port where nothing listens: every publish is refused, as in an outage."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    original = app.conf.broker_url
    app.conf.broker_url = f"redis://127.0.0.1:{port}/0"
    _reset_producer_pool()
    try:
        yield
    finally:
        app.conf.broker_url = original
        _reset_producer_pool()


@contextmanager
def embedded_worker():
    """A real Celery worker consuming from Redis, in a thread of this process."""
    assert not app.conf.task_always_eager, "a real worker test must not run tasks inline"
    app.control.purge()
    with start_worker(app, pool="solo", perform_ping_check=False, shutdown_timeout=30) as worker:
        yield worker
    app.control.purge()


@pytest.fixture(autouse=True)
def skip_worker_system_checks(monkeypatch):
    """The worker runs Django's system checks on start; with available_apps narrowed they would
    fail on auth, which these tests do not use (the checks run in the rest of the suite)."""
    monkeypatch.setenv("CELERY_SKIP_CHECKS", "1")


@pytest.fixture(autouse=True)
def empty_queue():
    """These tests count the queue: what earlier tests of this process published and no worker took
    (seen in CI: 17 messages) is not theirs."""
    purge_queue()


@pytest.fixture
def worker():
    with embedded_worker() as embedded:
        yield embedded


def test_delivery_goes_from_the_endpoint_through_the_broker_to_a_reference(worker, tracked, post_webhook):
    started = time.monotonic()
    response = post_webhook("pull_request", merged_pull_request(), guid="through-the-broker")
    assert response.status_code == 202
    wait_for(lambda: Reference.objects.filter(kind="pull_request", key="2", state="merged").exists())
    elapsed = time.monotonic() - started
    delivery = WebhookDelivery.objects.get(guid="through-the-broker")
    assert delivery.state == "processed"
    assert elapsed < WAIT_SECONDS
    print(f"\nwebhook -> broker -> worker -> reference in {elapsed:.2f} s")


def test_the_sweep_adds_nothing_while_the_overdue_deliveries_wait_in_the_queue(tracked, post_webhook, settings):
    """No worker runs: three deliveries wait in the queue, overdue. A backlog is not a loss."""
    try:
        for number in range(3):
            assert post_webhook("pull_request", merged_pull_request(), guid=f"backlog-{number}").status_code == 202
        assert queue_length() == 3
        settings.INGESTION_SWEEP_AFTER = 0
        assert sweep_deliveries() == 0
        assert queue_length() == 3

        purge_queue()  # the three messages are lost (as if Redis had dropped them)
        assert sweep_deliveries() == 3
        assert queue_length() == 3
        assert sweep_deliveries() == 0, "queued once: the next sweep finds them waiting"
    finally:
        purge_queue()


def test_a_lost_delivery_is_queued_by_the_next_sweep_whatever_else_is_queued(tracked, post_webhook, settings):
    """Beat's own tasks and other deliveries fill the queue; the one a killed worker held is missing from it.

    Counting the queue left such a delivery waiting as long as the queue held as many
    messages as there were overdue deliveries (issue 25: 553 s); its identity says it is lost.
    """
    try:
        for number in range(2):
            assert post_webhook("pull_request", merged_pull_request(), guid=f"waiting-{number}").status_code == 202
        for _ in range(5):
            sweep_deliveries.delay()  # what beat publishes meanwhile
        with app.connection_for_write() as connection:  # a worker takes the oldest message, then dies with it
            taken = connection.default_channel.client.rpop(app.conf.task_default_queue)
        assert taken is not None and queue_length() == 6
        settings.INGESTION_SWEEP_AFTER = 0
        assert sweep_deliveries() == 1
        assert queue_length() == 7
        requeued = WebhookDelivery.objects.get(guid="waiting-0").pk
        assert str(requeued) in queues.waiting(app, DELIVERY_WORK)
    finally:
        purge_queue()


def purge_queue() -> None:
    with app.connection_for_write() as connection:
        connection.default_channel.queue_purge(app.conf.task_default_queue)


def test_delivery_accepted_while_the_broker_is_down_is_swept_later(tracked, post_webhook, settings):
    with broker_unreachable():
        started = time.monotonic()
        response = post_webhook("pull_request", merged_pull_request(), guid="during-outage")
        answered_in = time.monotonic() - started
    assert response.status_code == 202
    assert answered_in < 5, f"the endpoint took {answered_in:.1f} s with the broker down"
    delivery = WebhookDelivery.objects.get(guid="during-outage")
    assert delivery.state == "pending"
    assert not Reference.objects.exists()

    settings.INGESTION_SWEEP_AFTER = 0
    with embedded_worker():
        sweep_deliveries.delay()  # as beat would, once the broker is back
        wait_for(lambda: WebhookDelivery.objects.get(guid="during-outage").state == "processed")
        # GitHub redelivers, the sweep runs again and a stray duplicate task arrives: nothing doubles
        assert post_webhook("pull_request", merged_pull_request(), guid="during-outage").status_code == 200
        sweep_deliveries.delay()
        process_delivery_task.delay(delivery.pk)
        wait_until_idle()
    assert Reference.objects.filter(kind="pull_request", key="2").count() == 1
    assert Reference.objects.get().state == "merged"
    assert WebhookDelivery.objects.count() == 1
    assert IngestionRun.objects.filter(delivery=delivery).count() == 1
    print(f"\nendpoint answered in {answered_in * 1000:.0f} ms with the broker down")


def test_concurrent_duplicates_process_a_delivery_once(worker, tracked, post_webhook):
    with broker_unreachable():
        post_webhook("pull_request", merged_pull_request(), guid="twice")
    delivery = WebhookDelivery.objects.get(guid="twice")
    for _ in range(3):
        process_delivery_task.delay(delivery.pk)
    wait_for(lambda: WebhookDelivery.objects.get(guid="twice").state == "processed")
    wait_until_idle()
    assert Reference.objects.filter(kind="pull_request").count() == 1
    assert IngestionRun.objects.filter(delivery=delivery).count() == 1
