"""Celery tasks of The Wire's data: thin wrappers, scheduled by beat or queued after a commit."""
from celery import shared_task

from publishing import rerenders

from .cards import refresh_after_rename
from .models import Digest, DigestRerender, MergeTally

#: What each kind of ``DigestRerender`` row owes: the digests showing the renamed topic or repository.
RERENDERS = {
    "topic": lambda pk, claim: refresh_after_rename(Digest.objects.filter(topic_id=pk), claim),
    "repository": lambda pk, claim: refresh_after_rename(Digest.objects.citing(pk), claim),
}


@shared_task(ignore_result=True)
def fold_merge_tallies() -> int:
    """Sum the repository charts' tally rows (``MergeTally.objects.fold``); idempotent, so a run lost costs nothing."""
    return MergeTally.objects.fold()


@shared_task(ignore_result=True)
def sweep_social_cards() -> int:
    """Beat: draw the og:image cards of digests written without a save (bulk imports, the bench generator), and
    queue again the re-renders after a rename whose task was lost (``publishing.rerenders.sweep``)."""
    rerenders.sweep(DigestRerender, rerender)
    return Digest.objects.draw_missing_social_cards()


@shared_task(acks_late=True, ignore_result=True)
def rerender(rerender_id: int) -> bool:
    """Re-render the digests a renamed topic or repository shows in (queued after the rename's commit, or swept)."""
    return rerenders.run(DigestRerender, rerender_id, RERENDERS)
