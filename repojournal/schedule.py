"""Beat's schedule, run inline: what `make run` (no broker, tasks inline) runs beside the server.

`make up` runs ``celery beat`` and `make worker` embeds it (``-B``); both send each due entry of
``CELERY_BEAT_SCHEDULE`` to the broker for a worker. Without ``REDIS_URL`` there is no broker and
no worker -- tasks run inline, in the process that queues them -- and nothing ran the schedule at
all: an outbound delivery that failed once was never retried, scheduled items were never mailed
or announced, lost work was never swept up, bulk rows never got their cards, nothing was pruned
(issue 39). ``manage.py run_schedule`` runs the same schedule in a process of its own.

The same schedule, not a copy: :class:`InlineScheduler` is Celery's own beat ``Scheduler`` -- it
reads ``CELERY_BEAT_SCHEDULE`` (and adds the entries beat adds itself), keeps the heap of due
times and asks each entry's ``schedule`` object ``is_due`` -- with one difference: a due entry's
task is called here (``task.apply()``), one after another, instead of being sent. A task it
queues in turn (a sweep queuing deliveries) runs inline too, as everywhere without a broker.
"""
import logging
import time

from celery import beat
from django.db import close_old_connections

logger = logging.getLogger(__name__)


class UnregisteredTasks(Exception):
    """Entries name tasks this process does not know: beat would send them by name to a broker nobody reads."""


class InlineScheduler(beat.Scheduler):
    """Celery's beat scheduler (entries, due times, heap), calling each due task in this process."""

    #: Nothing is sent, so no broker connection: ``tick()`` passes this to ``apply_entry``.
    producer = None

    def setup_schedule(self):
        """The entries as `celery beat`'s PersistentScheduler has them: the settings', then those beat adds
        itself (``celery.backend_cleanup``; the base class's order would drop it)."""
        self.merge_inplace(self.app.conf.beat_schedule)
        self.install_default_entries(self.schedule)

    def check(self) -> None:
        """Every entry's task is registered (the app's task modules imported first), or UnregisteredTasks."""
        self.app.loader.import_default_modules()
        missing = sorted(f"{name} ({entry.task})" for name, entry in self.schedule.items()
                         if entry.task not in self.app.tasks)
        if missing:
            raise UnregisteredTasks(", ".join(missing))

    def apply_entry(self, entry, producer=None):
        """Run the entry's task now, inline; a failure is logged and the entry runs again at its next time.

        Database connections are closed around each task, as a worker does: this process lives
        for days, and a connection the task broke (or left in a transaction) must not outlive it.
        """
        started = time.monotonic()
        close_old_connections()
        try:
            result = self.app.tasks[entry.task].apply(entry.args, entry.kwargs, throw=True)
        except Exception:
            logger.exception("Scheduled %s (%s) failed; it runs again at its next time.", entry.name, entry.task)
        else:
            logger.debug("Ran %s (%s) in %.2f s: %s", entry.name, entry.task, time.monotonic() - started,
                         result.result)
        finally:
            close_old_connections()


def run_forever(scheduler: InlineScheduler) -> None:
    """Beat's loop (``celery.beat.Service.start``): run what is due, sleep until the next entry is."""
    while True:
        delay = scheduler.tick()
        if delay and delay > 0:
            time.sleep(delay)
