"""kombu's Redis transport, publishing through one redis-py client per channel.

kombu's Redis channel builds a new ``redis.Redis`` for every publish. That
client owns no socket -- each command borrows a connection from the channel's
pool -- but redis-py's constructor fills a table of ~170 response callbacks,
which cost the webhook more CPU than the LPUSH it sends. One client per
channel (and per pool: kombu replaces the pool when it reconnects) sends the
same commands over the same pool. Only the webhook's producers use this
transport (``ingestion.webhooks.broker_producers``); workers keep kombu's.
"""
from contextlib import contextmanager

from kombu.transport import redis as kombu_redis


class Channel(kombu_redis.Channel):
    _publishing_client = None

    @contextmanager
    def conn_or_acquire(self, client=None):
        if client is None:
            pool = self.pool
            if self._publishing_client is None or self._publishing_client.connection_pool is not pool:
                self._publishing_client = self._create_client()
            client = self._publishing_client
        yield client


class Transport(kombu_redis.Transport):
    Channel = Channel


def publish_options(producer) -> dict:
    """Options for a task sent on ``producer``: on this transport, no queue declaration.

    Celery declares the task's queue before every publish; kombu remembers it
    was declared, but still copies and binds the queue each time. On Redis a
    task goes to the anonymous exchange: its message is pushed onto the
    queue's list whether or not the queue was declared (workers declare
    theirs when they start), so the declaration decides nothing here.
    """
    return {"declare": ()} if isinstance(producer.channel, Channel) else {}
