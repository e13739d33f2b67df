"""What one delivery costs the endpoint: one INSERT, and a producer from a pool instead of a new broker connection."""
import os

import django.contrib.auth.middleware  # noqa: F401  imported while auth is installed (see test_celery)
import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from kombu.exceptions import OperationalError

from ingestion import webhooks
from ingestion.models import WebhookDelivery
from ingestion.tasks import process_delivery_task

from .conftest import fixture_body

pytestmark = pytest.mark.django_db


@pytest.fixture
def queued(monkeypatch):
    """The ids sent to the broker, and the broker connection each was sent on (nothing reaches a worker)."""
    sent = []

    def apply_async(args, producer=None, **options):
        sent.append((args[0], producer.connection))

    monkeypatch.setattr(process_delivery_task, "apply_async", apply_async)
    return sent


@pytest.mark.django_db(transaction=True, available_apps=["digests", "blog", "ingestion", "taggit", "reversion"])
def test_a_new_delivery_costs_one_insert_and_a_redelivery_queues_nothing(post_webhook, queued):
    """Outside a transaction (as in production) the unique GUID decides: no SELECT first, no BEGIN/COMMIT."""
    body = fixture_body("pull_request.opened")
    with CaptureQueriesContext(connection) as queries:
        response = post_webhook("pull_request", body, guid="once")
    assert response.status_code == 202
    assert [query["sql"].split()[0] for query in queries.captured_queries] == ["INSERT"]
    delivery = WebhookDelivery.objects.get(guid="once")
    assert [delivery_id for delivery_id, _connection in queued] == [delivery.pk]

    again = post_webhook("pull_request", body, guid="once")
    assert (again.status_code, again.json()) == (200, {"delivery": "once", "status": "duplicate"})
    assert len(queued) == 1
    assert WebhookDelivery.objects.count() == 1


def test_deliveries_share_one_pooled_broker_connection(post_webhook, queued, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        for guid in ("a", "b", "c"):
            assert post_webhook("ping", fixture_body("ping"), guid=guid).status_code == 202
    assert len(queued) == 3
    assert len({id(broker_connection) for _id, broker_connection in queued}) == 1


def test_a_broker_error_still_answers_202_and_leaves_the_delivery_for_the_sweep(
    post_webhook, monkeypatch, caplog, django_capture_on_commit_callbacks
):
    def refused(*args, **kwargs):
        raise OperationalError("Error 111 connecting to 127.0.0.1:6379. Connection refused.")

    monkeypatch.setattr(process_delivery_task, "apply_async", refused)
    with django_capture_on_commit_callbacks(execute=True):
        response = post_webhook("ping", fixture_body("ping"), guid="while-down")
    assert (response.status_code, response.json()["status"]) == (202, "queued")
    assert WebhookDelivery.objects.get(guid="while-down").state == WebhookDelivery.State.PENDING
    assert "the sweep will process it" in caplog.text


@pytest.mark.skipif(not os.environ.get("REDIS_URL"), reason="needs a real Redis broker: set REDIS_URL")
def test_the_pool_reconnects_after_the_broker_dropped_its_connections():
    """As after a Redis restart: the next delivery is queued on a fresh connection, not lost."""
    app = process_delivery_task.app
    with app.connection_for_write() as inspector:
        redis = inspector.default_channel.client
        redis.delete("celery")
        webhooks.enqueue(1)
        for client in redis.client_list():
            if client.get("cmd") == "lpush" and client["id"] != str(redis.client_id()):
                redis.client_kill_filter(_id=client["id"])
        webhooks.enqueue(2)
        assert redis.llen("celery") == 2
        redis.delete("celery")
