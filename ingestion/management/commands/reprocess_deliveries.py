"""Process stored webhook deliveries again (failed ones by default)."""
from django.core.management.base import BaseCommand

from ingestion.models import WebhookDelivery
from ingestion.deliveries import process_delivery


class Command(BaseCommand):
    help = ("Reprocess stored GitHub webhook deliveries: failed and pending ones by default, "
            "or those in --state, or the given GUIDs. Safe to repeat: imports are upserts.")

    def add_arguments(self, parser):
        parser.add_argument("guids", nargs="*", help="Only these X-GitHub-Delivery GUIDs.")
        parser.add_argument("--state", action="append", choices=WebhookDelivery.State.values,
                            help="States to reprocess (repeatable; default: failed and pending). "
                                 "Use --state ignored after tracking a new repository.")

    def handle(self, *args, guids: list[str], state: list[str] | None, **options):
        deliveries = WebhookDelivery.objects.order_by("received_at", "pk")
        if guids:
            deliveries = deliveries.filter(guid__in=guids)
        else:
            deliveries = deliveries.filter(state__in=state or ["failed", "pending"])
        outcomes: dict[str, int] = {}
        for pk in deliveries.values_list("pk", flat=True):
            try:
                delivery = process_delivery(pk, force=True)
                outcome = delivery.state if delivery else "skipped"
            except Exception as exc:  # recorded on the delivery; keep going with the others
                self.stderr.write(f"delivery {pk}: {type(exc).__name__}: {exc}")
                outcome = "failed"
            outcomes[outcome] = outcomes.get(outcome, 0) + 1
        summary = ", ".join(f"{count} {name}" for name, count in sorted(outcomes.items())) or "nothing to do"
        self.stdout.write(self.style.SUCCESS(f"Reprocessed deliveries: {summary}."))
