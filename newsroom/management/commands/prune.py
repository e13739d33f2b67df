"""``manage.py prune [--dry-run]``: apply the retention rules now, or say what they would prune."""
from django.core.management.base import BaseCommand

from newsroom import retention


class Command(BaseCommand):
    help = "Prune what the retention rules name (docs/operations.md, “Retention”); --dry-run only counts."

    def add_arguments(self, parser):
        parser.add_argument("--dry-run", action="store_true", help="count what would be pruned; change nothing")

    def handle(self, *args, dry_run=False, **options):
        results = retention.prune_all(dry_run=dry_run)
        for rule in retention.RULES:
            verb = "would prune" if dry_run else "pruned"
            self.stdout.write(f"{rule.name}: {verb} {results[rule.name]} (older than {rule.days} days; "
                              f"{rule.action}; keeps {rule.keeps})")
