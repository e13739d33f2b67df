"""The Redis broker transport, with a workaround for a kombu 5.7.0 defect that made workers exit.

The defect (reproduced in tests/test_broker.py, which fails once kombu fixes it):
when Redis goes away while the worker waits on ``BRPOP``, Celery (5.7.0) calls
``connection.collect()`` and then ``connection.close()``. ``collect()`` closes
the channel, but kombu's ``redis.Channel.close()`` first reads the reply of the
``BRPOP`` in flight; with the server gone that read raises, so the channel is
left open. ``collect()`` then detaches the transport from its connection
(``transport.client = None``), and the second close tries to put the worker's
unacknowledged messages back on a fresh pool, whose ``_connparams`` reads
``None.hostname``: an AttributeError, which Celery does not treat as a
connection error, so the worker exits ("Unrecoverable error").

The workaround: a failed read of that pending reply is a lost connection, not a
reason to abandon the close. The close goes on; the unacknowledged messages
either go back at once or, with Redis down, stay in Redis's ``unacked`` hash
until ``visibility_timeout`` (and the delivery sweep queues their deliveries
again meanwhile; processing is idempotent). Selected by
``CELERY_BROKER_TRANSPORT`` (settings/base.py). Remove it, and the setting,
when tests/test_broker.py reports the defect gone.
"""
from queue import Empty

from kombu.exceptions import OperationalError
from kombu.transport import redis


class Channel(redis.Channel):
    def close(self):
        if self._in_poll:  # read (or give up on) the pending BRPOP reply before kombu's close does
            try:
                self._brpop_read()
            except Empty:
                pass
            except self.connection_errors + (OperationalError,):
                pass  # the server is gone: there is no reply to read, and _in_poll is now cleared
        super().close()


class Transport(redis.Transport):
    Channel = Channel
