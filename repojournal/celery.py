"""The Celery application and its Redis broker transport. Configuration lives in Django settings under CELERY_*."""
import os
import sys

from queue import Empty

from celery import Celery
from kombu.exceptions import OperationalError
from kombu.transport import redis

# One rule, as in README.md and docs/operations.md: the `celery` command (worker, beat) defaults
# to development settings, like manage.py, so the README's `celery -A repojournal worker -B` runs
# on a fresh checkout; wsgi.py/asgi.py default to production. Production sets
# DJANGO_SETTINGS_MODULE explicitly for every process. The package __init__ imports this module in
# web processes too, so the dev default applies only when the Celery command line is running
# (it has imported celery.bin.celery before loading `-A repojournal`).
if "celery.bin.celery" in sys.modules:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "repojournal.settings.dev")
else:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "repojournal.settings.prod")

app = Celery("repojournal")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


class Channel(redis.Channel):
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
    """kombu's Redis transport with the Channel above; CELERY_BROKER_TRANSPORT names it when REDIS_URL is set."""

    Channel = Channel
