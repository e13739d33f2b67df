"""``manage.py refresh_cards``: re-render the stored listing cards (and body HTML) of posts.

Run it after changing the card template or the Markdown renderer, and once after
migrating a database that already holds posts (``make migrate`` does, with
``--missing``). See blog/cards.py.
"""
from django.core.management.base import BaseCommand
from django.db.models import Q

from blog.cards import refresh_cards
from blog.models import Post
from publishing.signals import announce_bulk_write


class Command(BaseCommand):
    help = "Re-render the stored listing cards, body HTML, excerpts and word counts of posts."

    def add_arguments(self, parser):
        parser.add_argument("--missing", action="store_true", help="Only posts missing a stored card, page header or API authors and tags.")

    def handle(self, *args, missing: bool = False, **options):
        stale = Q(card_html="") | Q(header_html="") | Q(authors_tags={})
        posts = Post.objects.filter(stale) if missing else Post.objects.all()
        count = refresh_cards(posts, body=True)
        if count:
            announce_bulk_write(Post)  # bulk writes send no model signals
        self.stdout.write(f"{count} post card{'s' if count != 1 else ''} rendered")
