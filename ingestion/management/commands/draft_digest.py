"""Create or refresh the draft digest of a topic for one day of merged work."""
from django.core.management.base import BaseCommand, CommandError
from django.db.models import Q
from django.utils.dateparse import parse_date

from digests.models import Topic
from ingestion.drafting import draft_digest


class Command(BaseCommand):
    help = "Draft (or refresh the draft of) <topic>'s digest for <date> from that day's merged pull requests and commits."

    def add_arguments(self, parser):
        parser.add_argument("topic", help="Topic slug or name, e.g. pytorch")
        parser.add_argument("date", help="The day of activity, YYYY-MM-DD (UTC)")

    def handle(self, *args, topic: str, date: str, **options):
        day = parse_date(date) if len(date) == 10 else None
        if day is None:
            raise CommandError(f"date must be YYYY-MM-DD, not “{date}”.")
        found = Topic.objects.filter(Q(slug=topic) | Q(name__iexact=topic)).first()
        if found is None:
            raise CommandError(f"No topic “{topic}”.")
        result = draft_digest(found, day)
        style = self.style.WARNING if result.skipped else self.style.SUCCESS
        self.stdout.write(style(result.summary()))
