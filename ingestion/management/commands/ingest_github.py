"""Backfill or reconcile one repository from the GitHub REST API."""
import datetime
from contextlib import nullcontext

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError
from django.utils.dateparse import parse_date, parse_datetime
from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

from digests.models import Repository, full_name_validator
from ingestion.github import GitHubError
from ingestion.models import TrackedRepository
from ingestion.polling import TokenBusy, default_client, sync_repository, token_lock


def parse_since(value: str) -> datetime.datetime:
    """A date (midnight UTC) or an ISO datetime (UTC unless it names a zone)."""
    moment = parse_datetime(value)
    if moment is None:
        day = parse_date(value)
        if day is None:
            raise CommandError(f"--since must be a date (YYYY-MM-DD) or an ISO datetime, not “{value}”.")
        moment = datetime.datetime.combine(day, datetime.time())
    return moment if moment.tzinfo else moment.replace(tzinfo=datetime.UTC)


class Command(BaseCommand):
    help = "Import closed pull requests, default-branch commits and releases of owner/name (tracking it if needed)."

    def add_arguments(self, parser):
        parser.add_argument("full_name", help="owner/name, e.g. pytorch/executorch")
        parser.add_argument("--since", help="Import what changed since this date (default: the last sync).")
        parser.add_argument("--wait", type=float, default=600,
                            help="Seconds to wait for a running poll using the same token (default 600).")

    def handle(self, *args, full_name: str, since: str | None, **options):
        try:
            full_name_validator(full_name)
        except ValidationError as exc:
            raise CommandError(exc.messages[0]) from exc
        since_at = parse_since(since) if since else None
        repository, _ = Repository.objects.get_or_create_by_full_name(full_name)
        tracked, _ = TrackedRepository.objects.get_or_create(repository=repository)
        try:
            with token_lock(settings.GITHUB_TOKEN, wait=options["wait"]):
                counts = self._sync(tracked, since_at)
        except (GitHubError, TokenBusy) as exc:
            raise CommandError(str(exc)) from exc
        self.stdout.write(self.style.SUCCESS(f"{repository}: {counts}"))

    def _sync(self, tracked: TrackedRepository, since_at):
        """Sync, with a live progress bar when writing to a terminal."""
        interactive = self.stdout.isatty()
        bar = Progress(SpinnerColumn(), TextColumn("{task.description}"), TextColumn("{task.completed} items"),
                       TimeElapsedColumn()) if interactive else nullcontext()
        with bar:
            task = bar.add_task(f"Importing {tracked.repository}", total=None) if interactive else None
            progress = (lambda kind: bar.update(task, advance=1, description=f"{tracked.repository}: {kind}s")
                        ) if interactive else None
            return sync_repository(tracked, default_client(), since=since_at, progress=progress)
