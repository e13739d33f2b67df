"""The kombu defect behind workers exiting on a Redis restart, and repojournal.celery's workaround.

Both tests use a redis-server of their own, stopped while a BRPOP is in flight
as a worker's event loop leaves it. The first pins the defect in the stock
transport: when it fails after a kombu upgrade, the defect is fixed upstream,
and the transport in repojournal/celery.py with its setting should go.
"""
import shutil
import tempfile
from pathlib import Path

import pytest
from kombu import Connection, Exchange, Queue
from kombu.transport import redis as kombu_redis

from repojournal.celery import Transport
from tests.faults.services import RedisServer

pytestmark = pytest.mark.skipif(not shutil.which("redis-server"), reason="needs redis-server on PATH")


@pytest.fixture
def redis_server():
    directory = Path(tempfile.mkdtemp(prefix="repojournal-broker-"))
    server = RedisServer(directory)
    server.start()
    yield server
    server.kill()
    shutil.rmtree(directory, ignore_errors=True)


def channel_waiting_on_a_dead_server(server: RedisServer, transport):
    """A channel holding one unacknowledged message, then the server gone while BRPOPs are in flight.

    A worker has two channels (tasks, and the remote-control one opened after
    it); both wait on the server when it goes away, as here.
    """
    tasks, control = (Queue(name, Exchange(name), name) for name in ("broker-test", "broker-test-control"))
    connection = Connection(server.url, transport=transport)
    connection.Producer().publish({"n": 1}, exchange=tasks.exchange, routing_key=tasks.name, declare=[tasks])
    channel = connection.default_channel
    connection.Consumer([tasks], callbacks=[lambda body, message: None], channel=channel).consume()
    connection.drain_events(timeout=5)
    assert len(channel.qos._delivered) == 1
    second = connection.channel()
    connection.Consumer([control], callbacks=[lambda body, message: None], channel=second).consume()
    with pytest.raises(TimeoutError):
        connection.drain_events(timeout=0.2)  # nothing to read: leaves a BRPOP in flight on each channel
    assert channel._in_poll and second._in_poll
    server.kill()
    return connection, channel


def test_stock_kombu_leaves_the_channel_open_when_redis_goes_away_during_brpop(redis_server):
    connection, channel = channel_waiting_on_a_dead_server(redis_server, kombu_redis.Transport)
    # What Celery 5.7.0 does on a lost connection: collect(), which detaches the transport, then close().
    connection.collect(socket_timeout=1)
    assert not channel.closed, "kombu now closes the channel: remove the transport in repojournal/celery.py and its setting"
    with pytest.raises(AttributeError, match="hostname"):
        connection.close()


def test_our_transport_closes_the_channel_and_the_connection_cleanly(redis_server):
    connection, channel = channel_waiting_on_a_dead_server(redis_server, Transport)
    connection.collect(socket_timeout=1)
    assert channel.closed
    connection.close()  # no AttributeError: the worker reconnects instead of exiting


def test_settings_select_our_transport_only_with_redis(settings):
    from repojournal.celery import app

    assert app.conf.broker_connection_max_retries is None
    assert settings.CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP is True
