"""``manage.py refresh_digests``: re-render the stored cards and page parts of digests.

Run it after changing a template under ``templates/digests/parts/`` or the
Markdown renderer; ``--missing`` renders only digests that have none yet
(a database loaded without the 0006 data migration). See digests/cards.py.
"""
from django.core.management.base import BaseCommand

from digests.models import Digest


class Command(BaseCommand):
    help = "Re-render the stored listing cards and page parts (references, action items, FAQ, JSON-LD) of digests."

    def add_arguments(self, parser):
        parser.add_argument("--missing", action="store_true", help="Only digests that have no card yet.")

    def handle(self, *args, missing: bool = False, **options):
        digests = Digest.objects.filter(card_html="") if missing else Digest.objects.all()
        count = digests.refresh_rendered()
        self.stdout.write(f"{count} digest{'s' if count != 1 else ''} rendered")
