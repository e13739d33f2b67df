"""`manage.py send_newsletters`: run the newsletters' beat sweep once, here and now.

Beat runs it every NEWSLETTERS_SWEEP_SECONDS where there is a broker (`make up`, production). `make run`
has no beat: a scheduled item whose time came, a daily summary now due or a send interrupted there
goes out when this command runs (tasks run inline without REDIS_URL, so it sends before returning).
"""
from django.core.management.base import BaseCommand

from newsletters.tasks import sweep_newsletters


class Command(BaseCommand):
    help = "Mail what is owed now: items published without a message, confirmations, due summaries and retries."

    def handle(self, *args, **options):
        self.stdout.write(sweep_newsletters())
