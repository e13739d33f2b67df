"""What one delivery costs the endpoint: one INSERT, and a producer from a pool instead of a new broker connection."""
import base64
import json
import os

import django.contrib.auth.middleware  # noqa: F401  imported while auth is installed (see test_celery)
import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from kombu.exceptions import OperationalError

from ingestion import webhooks
from ingestion.models import WebhookDelivery
from ingestion.tasks import process_delivery_task

from .conftest import fixture_body, sign

pytestmark = pytest.mark.django_db
#: This test run's own queue (settings.test): the tests read and empty it, never a shared one.
QUEUE = process_delivery_task.app.conf.task_default_queue


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
        redis.delete(QUEUE)
        webhooks.enqueue(1)
        for client in redis.client_list():
            if client.get("cmd") == "lpush" and client["id"] != str(redis.client_id()):
                redis.client_kill_filter(_id=client["id"])
        webhooks.enqueue(2)
        assert redis.llen(QUEUE) == 2
        redis.delete(QUEUE)


def test_the_stored_body_is_byte_identical_and_its_signature_still_verifies(post_webhook, webhook_secret):
    """Read back from the database, not from the instance: what PostgreSQL stored (bound as binary,
    compressed with lz4) is exactly what GitHub signed."""
    body = fixture_body("pull_request.opened")
    assert post_webhook("pull_request", body, guid="kept").status_code == 202
    stored = WebhookDelivery.objects.values_list("body", flat=True).get(guid="kept")
    assert bytes(stored) == body
    assert webhooks.signature_matches(webhook_secret, bytes(stored), sign(body))
    assert WebhookDelivery.objects.get(guid="kept").payload()["pull_request"]["number"] == 2


def test_every_byte_value_survives_storage():
    body = bytes(range(256)) * 4
    webhooks.store_delivery("all-bytes", "ping", {}, {}, body)
    assert bytes(WebhookDelivery.objects.values_list("body", flat=True).get(guid="all-bytes")) == body


@pytest.mark.skipif(connection.vendor != "postgresql", reason="server-side binding is PostgreSQL's")
def test_the_body_is_bound_as_a_parameter_not_inlined_in_the_sql(post_webhook):
    """Parameters travel apart from the SQL (settings: server_side_binding), so the body is not hex-escaped."""
    sent = []

    def record(execute, sql, params, many, context):
        result = execute(sql, params, many, context)
        sent.append(bytes(context["cursor"].cursor._query.query))  # what psycopg sent, as Django's own logging reads it
        return result

    body = fixture_body("pull_request.opened")
    with connection.execute_wrapper(record):
        assert post_webhook("pull_request", body, guid="bound").status_code == 202
    (insert,) = [query for query in sent if query.startswith(b"INSERT")]
    assert len(insert) < len(body) // 10 and b"$1" in insert


@pytest.mark.skipif(connection.vendor != "postgresql", reason="lz4 TOAST compression is PostgreSQL's")
def test_bodies_are_compressed_with_lz4_when_the_server_has_it():
    with connection.cursor() as cursor:
        cursor.execute("SELECT 'lz4' = ANY(enumvals) FROM pg_settings WHERE name = 'default_toast_compression'")
        if not cursor.fetchone()[0]:
            pytest.skip("this PostgreSQL was built without lz4")
        cursor.execute("SELECT attcompression FROM pg_attribute WHERE attrelid = %s::regclass AND attname = 'body'",
                       [WebhookDelivery._meta.db_table])
        assert cursor.fetchone()[0] == "l"


def test_a_redelivery_inside_a_transaction_leaves_the_transaction_usable():
    from django.db import transaction

    with transaction.atomic():
        _first, created = webhooks.store_delivery("in-tx", "ping", {}, {}, b"{}")
        with CaptureQueriesContext(connection) as queries:
            again, created_again = webhooks.store_delivery("in-tx", "ping", {}, {}, b"{}")
        assert (created, created_again, again.guid) == (True, False, "in-tx")
        assert WebhookDelivery.objects.filter(guid="in-tx").count() == 1
    # The INSERT does nothing on a stored GUID instead of failing: no savepoint to roll back to.
    assert [query["sql"].split()[0] for query in queries.captured_queries] == ["INSERT", "SELECT"]


def test_insert_new_stores_what_create_would_and_does_nothing_for_a_stored_guid():
    fields = {"event": "pull_request", "action": "opened", "repository_full_name": "octo/repo",
              "headers": {"X-GitHub-Event": "pull_request", "User-Agent": "GitHub-Hookshot/1"}, "body": b'{"a": 1}'}
    by_orm = WebhookDelivery.objects.create(guid="by-orm", **fields)
    new_id = WebhookDelivery.objects.insert_new(guid="by-hand", **fields)
    assert WebhookDelivery.objects.insert_new(guid="by-hand", **{**fields, "event": "push"}) is None

    columns = [field.attname for field in WebhookDelivery._meta.concrete_fields if field.attname not in ("id", "guid")]
    by_hand = WebhookDelivery.objects.get(pk=new_id)
    by_orm.refresh_from_db()
    assert by_hand.guid == "by-hand" and by_hand.event == "pull_request"  # the second INSERT changed nothing
    assert abs((by_hand.received_at - by_orm.received_at).total_seconds()) < 60
    columns.remove("received_at")
    assert {name: getattr(by_hand, name) for name in columns} == {name: getattr(by_orm, name) for name in columns}
    assert bytes(by_hand.body) == b'{"a": 1}' and by_hand.state == WebhookDelivery.State.PENDING


def test_the_delivery_returned_for_a_new_guid_is_the_stored_row():
    delivery, created = webhooks.store_delivery("returned", "ping", {"zen": "Keep it simple"}, {}, b"{}")
    assert created and not delivery._state.adding
    stored = WebhookDelivery.objects.get(guid="returned")
    assert (delivery.pk, delivery.received_at, delivery.state) == (stored.pk, stored.received_at, stored.state)
    delivery.refresh_from_db()  # works on the returned instance: it knows its row


def test_json_that_only_the_standard_library_reads_is_still_accepted(post_webhook):
    """orjson parses the body; what it refuses but json accepts (NaN, UTF-16) is still a delivery, as before."""
    for guid, body in (("nan", b'{"zen": NaN}'), ("utf16", '{"zen": "Keep it simple"}'.encode("utf-16"))):
        assert post_webhook("ping", body, guid=guid).status_code == 202
        assert bytes(WebhookDelivery.objects.get(guid=guid).body) == body


@pytest.mark.skipif(not os.environ.get("REDIS_URL"), reason="needs a real Redis broker: set REDIS_URL")
def test_the_queued_message_is_a_regular_celery_task_message(post_webhook, django_capture_on_commit_callbacks):
    """Exactly one message per delivery, once the INSERT is committed, readable by any Celery worker."""
    app = process_delivery_task.app
    with app.connection_for_write() as inspector:
        redis = inspector.default_channel.client
        redis.delete(QUEUE)
        with django_capture_on_commit_callbacks(execute=False) as callbacks:
            assert post_webhook("ping", fixture_body("ping"), guid="message").status_code == 202
            assert redis.llen(QUEUE) == 0  # nothing before the commit
        for callback in callbacks:
            callback()
        messages = redis.lrange(QUEUE, 0, -1)
        redis.delete(QUEUE)
    delivery = WebhookDelivery.objects.get(guid="message")
    assert len(messages) == 1
    message = json.loads(messages[0])
    headers = message["headers"]
    assert (headers["task"], headers["argsrepr"], headers["kwargsrepr"]) == (
        process_delivery_task.name, f"({delivery.pk},)", "{}")
    body = json.loads(base64.b64decode(message["body"]))
    assert body[0] == [delivery.pk] and body[1] == {}
