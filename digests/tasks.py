"""Celery tasks of The Wire's data: thin wrappers, scheduled by beat."""
from celery import shared_task

from .models import Digest, MergeTally


@shared_task(ignore_result=True)
def fold_merge_tallies() -> int:
    """Sum the repository charts' tally rows (``MergeTally.objects.fold``); idempotent, so a run lost costs nothing."""
    return MergeTally.objects.fold()


@shared_task(ignore_result=True)
def sweep_social_cards() -> int:
    """Beat: draw the og:image cards of digests written without a save (bulk imports, the bench generator)."""
    return Digest.objects.draw_missing_social_cards()
