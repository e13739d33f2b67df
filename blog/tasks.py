"""Celery tasks of the blog: thin wrappers, scheduled by beat."""
from celery import shared_task

from .models import Post


@shared_task(ignore_result=True)
def sweep_social_cards() -> int:
    """Beat: draw the og:image cards of posts written without a save (bulk imports, the bench generator)."""
    return Post.objects.draw_missing_social_cards()
