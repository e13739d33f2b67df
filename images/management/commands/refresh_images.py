"""Re-render every page that shows an image, e.g. after moving renditions to a bucket (new URLs)."""
from django.core.management.base import BaseCommand

from images.models import Image
from images.signals import announce


class Command(BaseCommand):
    help = "Re-render the posts and digests showing images (their stored HTML names the renditions' URLs)."

    def handle(self, *args, **options):
        shown = Image.objects.filter(uses__isnull=False).distinct()
        for image in shown.iterator():
            announce(image)  # the content apps re-render what shows it
        self.stdout.write(f"Re-rendered the pages showing {shown.count()} image(s).")
