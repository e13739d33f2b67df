"""The webhook's producers: kombu's Redis transport with one redis-py client per channel."""
import json
import os
from types import SimpleNamespace

import pytest
from kombu import Connection

from ingestion import broker, webhooks
from ingestion.tasks import process_delivery_task

needs_redis = pytest.mark.skipif(not os.environ.get("REDIS_URL"), reason="needs a real Redis broker: set REDIS_URL")


@needs_redis
def test_webhook_producers_use_the_transport_and_one_client_for_every_publish():
    app = process_delivery_task.app
    with app.connection_for_write() as inspector:
        redis = inspector.default_channel.client
        redis.delete("celery")
        webhooks.enqueue(101)
        with webhooks.broker_producers(app).acquire(block=True, timeout=1) as producer:
            assert isinstance(producer.channel, broker.Channel)
            client = producer.channel._publishing_client
        webhooks.enqueue(102)
        with webhooks.broker_producers(app).acquire(block=True, timeout=1) as producer:
            assert producer.channel._publishing_client is client
        messages = [json.loads(message) for message in redis.lrange("celery", 0, -1)]
        redis.delete("celery")
    assert sorted(message["headers"]["argsrepr"] for message in messages) == ["(101,)", "(102,)"]


@needs_redis
def test_a_task_reaches_its_queue_although_the_producer_declares_nothing():
    """Workers declare their queues; a publish on Redis pushes onto the queue's list regardless."""
    app = process_delivery_task.app
    with app.connection_for_write() as inspector:
        redis = inspector.default_channel.client
        bindings = {key: redis.dump(key) for key in redis.keys("_kombu.binding*")}
        redis.delete("celery", *bindings)
        try:
            webhooks.enqueue(103)
            assert redis.llen("celery") == 1
        finally:
            redis.delete("celery")
            for key, dumped in bindings.items():
                redis.restore(key, 0, dumped, replace=True)


@needs_redis
def test_a_new_pool_gets_a_new_client():
    """kombu replaces a channel's pool when it reconnects; the client must follow it."""
    with Connection(os.environ["REDIS_URL"], transport=broker.Transport) as connection:
        channel = connection.default_channel
        with channel.conn_or_acquire() as first:
            pass
        with channel.conn_or_acquire() as again:
            assert again is first and first.connection_pool is channel.pool
        channel._disconnect_pools()
        with channel.conn_or_acquire() as after:
            assert after is not first and after.connection_pool is channel.pool
        with channel.conn_or_acquire(client=first) as given:
            assert given is first  # an explicit client is still used as is


def test_other_brokers_keep_kombus_transport_and_celerys_declarations():
    with Connection("memory://") as connection:
        producer = connection.Producer()
        assert not isinstance(producer.channel, broker.Channel)
        assert broker.publish_options(producer) == {}
    on_our_channel = SimpleNamespace(channel=broker.Channel.__new__(broker.Channel))  # no broker needed
    assert broker.publish_options(on_our_channel) == {"declare": ()}
