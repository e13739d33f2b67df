"""Scheduled publication through the edge: pages change at ``published_at`` with no write at all.

Three things make a post or digest scheduled for 10:00:00 show at the edge by
10:00:05 (docs/deployment.md, "Edge contract"):

1. Saving it queues a purge of its keys with ``eta=published_at`` (``edge.changes``).
2. Beat runs ``sweep()`` every ``EDGE_SCHEDULE_SWEEP_SECONDS`` (2 s): it purges
   every post and digest whose ``published_at`` passed since the previous sweep
   (less ``OVERLAP``, so a page rendered just before the moment and stored just
   after the first purge is purged again). The last sweep's time is kept in the
   cache; sweeps are idempotent, so two beats or two workers only purge twice.
3. The edge's ``s-maxage`` never runs past the next scheduled publication
   (``edge.middleware.public_cache_control``), so even with no worker running
   no page outlives it by more than a second.
"""
import datetime

from django.apps import apps
from django.core.cache import cache
from django.utils import timezone

from blog.models import Post
from digests.models import Digest
from publishing.workflow import Status

from . import affected

LAST_SWEEP_KEY = "edge:scheduled-sweep"
OVERLAP = datetime.timedelta(seconds=5)
#: A first sweep (nothing stored) looks back this far.
FIRST_LOOKBACK = datetime.timedelta(minutes=10)


def due(model, since: datetime.datetime, now: datetime.datetime):
    return model._base_manager.filter(status=Status.PUBLISHED, published_at__gt=since, published_at__lte=now)


def sweep(now: datetime.datetime | None = None) -> set[str]:
    """The keys of posts and digests that went live since the last sweep; remembers this sweep."""
    now = now or timezone.now()
    last = cache.get(LAST_SWEEP_KEY)
    since = (last or now - FIRST_LOOKBACK) - OVERLAP
    keys: set[str] = set()
    for post in due(Post, since, now).only("pk", "status", "published_at"):
        keys |= affected.post_keys(post, listings=True)
    for digest in due(Digest, since, now).only("pk", "status", "published_at", "topic_id"):
        keys |= affected.digest_keys(digest, listings=True)
    if last is None or now > last:
        cache.set(LAST_SWEEP_KEY, now, timeout=None)
    return keys


def keys_if_live(label: str, pk: int) -> set[str]:
    """The keys of this post or digest if it is published and its time has come (else none: it was
    unpublished or moved since; its next save queues another purge)."""
    model = apps.get_model(label)
    obj = model._base_manager.filter(pk=pk, status=Status.PUBLISHED, published_at__lte=timezone.now()).first()
    return affected.keys_for_objects([obj]) if obj is not None else set()
