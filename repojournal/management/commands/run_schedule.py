"""``manage.py run_schedule``: beat's schedule with every task inline -- `make run`'s second process."""
import logging
import signal
import sys

from django.core.management.base import BaseCommand, CommandError

from repojournal.celery import app
from repojournal.schedule import InlineScheduler, UnregisteredTasks, run_forever


class Command(BaseCommand):
    help = ("Run beat's schedule (CELERY_BEAT_SCHEDULE) where tasks run inline (no REDIS_URL), each due task "
            "in this process, until stopped; `make run` starts it beside the server. With a broker it exits: "
            "beat runs the schedule there (`make worker`, `celery -A repojournal beat`).")

    def handle(self, *args, **options):
        if not app.conf.task_always_eager:
            self.stdout.write("Tasks go to the broker (REDIS_URL): beat runs the schedule "
                              "(`make worker`, or `celery -A repojournal beat`); nothing to run here.")
            return
        scheduler = InlineScheduler(app)
        try:
            scheduler.check()
        except UnregisteredTasks as exc:
            raise CommandError(f"The schedule names tasks no module registers: {exc}") from exc
        if options["verbosity"] < 2:  # `make run`'s terminal shows requests, not a line per sweep every 2 s
            logging.getLogger("celery.app.trace").setLevel(logging.WARNING)  # failures still show
        else:
            logging.getLogger("repojournal.schedule").setLevel(logging.DEBUG)  # each run, its time and result
        # `make run` stops it with SIGTERM when the server stops: end as Ctrl-C would. An interrupted
        # task is like one a killed worker held: its transaction rolls back and a sweep redoes it.
        signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
        self.stdout.write(f"Running beat's schedule inline: {', '.join(sorted(scheduler.schedule))}.")
        try:
            run_forever(scheduler)
        except KeyboardInterrupt:
            pass
