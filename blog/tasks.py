"""Celery tasks of the blog: thin wrappers, scheduled by beat or queued after a commit."""
from celery import shared_task

from publishing import rerenders

from .cards import refresh_after_rename
from .models import Post, PostRerender

#: What each kind of ``PostRerender`` row owes: the posts showing the renamed author (cards and og:image
#: bylines) or tag (cards only).
RERENDERS = {
    "author": lambda pk, claim: refresh_after_rename(Post.objects.filter(post_authors__author_id=pk), claim,
                                                     social=True),
    "tag": lambda pk, claim: refresh_after_rename(Post.objects.filter(tagged_items__tag_id=pk), claim, social=False),
}


@shared_task(ignore_result=True)
def sweep_social_cards() -> int:
    """Beat: draw the og:image cards of posts written without a save (bulk imports, the bench generator), and
    queue again the re-renders after a rename whose task was lost (``publishing.rerenders.sweep``)."""
    rerenders.sweep(PostRerender, rerender)
    return Post.objects.draw_missing_social_cards()


@shared_task(acks_late=True, ignore_result=True)
def rerender(rerender_id: int) -> bool:
    """Re-render the posts a renamed author or tag shows in (queued after the rename's commit, or by the sweep)."""
    return rerenders.run(PostRerender, rerender_id, RERENDERS)
