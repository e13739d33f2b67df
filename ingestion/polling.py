"""Reconciling a tracked repository with the REST API.

GitHub does not redeliver webhooks that failed, so a periodic poll lists what
changed since the last successful sync (closed pull requests by update time,
default-branch commits, releases) and upserts it, a page (up to 100 items) at
a time in a fixed number of queries. A list whose first page answers 304 to
our stored ETag has nothing new and costs no rate limit.
"""
import datetime
import hashlib
import itertools
import logging
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from django.conf import settings
from django.core.cache import cache
from django.utils import timezone
from django.utils.dateparse import parse_datetime

from .github import GitHubClient, GitHubError  # noqa: F401  (GitHubError re-exported for tasks)
from .importers import Counts, rest_commit_fields, upsert_commits, upsert_pull_requests, upsert_releases
from .models import IngestionRun, TrackedRepository
from .runs import recorded_run

logger = logging.getLogger(__name__)

FIRST_SYNC_WINDOW = datetime.timedelta(days=7)
PER_PAGE = 100

Progress = Callable[[str], None]


def token_fingerprint(token: str) -> str:
    """A short, non-secret name for a token, to key the one-poll-per-token lock."""
    return hashlib.sha256(token.encode()).hexdigest()[:16]


class TokenBusy(Exception):
    """Another poll is using the token; GitHub asks integrators not to make concurrent requests."""


@contextmanager
def token_lock(token: str, *, wait: float = 0, poll_every: float = 1.0):
    """Hold the token's lock (in the shared cache) for a whole poll; raise TokenBusy after ``wait`` seconds.

    The lock is a lease of ``INGESTION_TOKEN_LEASE`` seconds that a thread renews
    every third of it while the holder lives. A holder killed outright (``kill -9``,
    an OOM kill) cannot release it, so the lease lapses within that time and polls
    and redelivery go on; a fixed hour-long lock stopped both for an hour.
    """
    key = f"ingestion:github-token:{token_fingerprint(token)}"
    lease = settings.INGESTION_TOKEN_LEASE
    deadline = time.monotonic() + wait
    while not cache.add(key, "polling", lease):
        if time.monotonic() >= deadline:
            raise TokenBusy("another poll is using this GitHub token")
        time.sleep(poll_every)
    released = threading.Event()
    renewer = threading.Thread(target=_renew, args=(key, lease, released), daemon=True, name="token-lease")
    renewer.start()
    try:
        yield
    finally:
        released.set()
        renewer.join()
        cache.delete(key)


def _renew(key: str, lease: float, released: threading.Event) -> None:
    while not released.wait(lease / 3):
        try:
            cache.touch(key, lease)
        except Exception:  # a cache blip: try again at the next third; the lease outlasts two misses
            logger.warning("Could not renew the GitHub token's lock.", exc_info=True)


def default_client() -> GitHubClient:
    return GitHubClient(settings.GITHUB_API_URL, settings.GITHUB_TOKEN)


def _older(value: str | None, since: datetime.datetime) -> bool:
    when = parse_datetime(value) if value else None
    return when is not None and when < since


def _walk(client: GitHubClient, tracked: TrackedRepository, name: str, url: str, params: dict,
          is_old: Callable[[dict], bool], use_etag: bool) -> Iterator[list[dict]]:
    """Pages of one list, newest first, until an item is older than the last sync.

    Yields each page's new items as a list, so a page is imported in one batch.
    The first page's ETag is stored only once the walk has finished, so an
    interrupted walk is repeated in full next time.
    """
    first_etag = None
    for page in client.pages(url, params, etag=tracked.etags.get(name, "") if use_etag else ""):
        if page.not_modified:
            return
        first_etag = page.etag if first_etag is None else first_etag
        fresh = list(itertools.takewhile(lambda item: not is_old(item), page.items))
        if fresh:
            yield fresh
        if len(fresh) < len(page.items):
            tracked.etags[name] = first_etag
            return
    if first_etag:
        tracked.etags[name] = first_etag


def _pulls(client, tracked, base, since, use_etag) -> Iterator[tuple[str, list[dict]]]:
    params = {"state": "closed", "sort": "updated", "direction": "desc", "per_page": PER_PAGE}
    for pulls in _walk(client, tracked, "pulls", f"{base}/pulls", params,
                       lambda item: _older(item.get("updated_at"), since), use_etag):
        yield "pull", pulls


def _commits(client, tracked, base, since, use_etag) -> Iterator[tuple[str, list[dict]]]:
    params = {"sha": tracked.default_branch, "per_page": PER_PAGE}
    for commits in _walk(client, tracked, "commits", f"{base}/commits", params,
                         lambda item: _older((item["commit"].get("committer") or {}).get("date"), since), use_etag):
        yield "commit", commits


def _releases(client, tracked, base, since, use_etag) -> Iterator[tuple[str, list[dict]]]:
    for releases in _walk(client, tracked, "releases", f"{base}/releases", {"per_page": PER_PAGE},
                          lambda item: _older(item.get("published_at") or item.get("created_at"), since), use_etag):
        published = [release for release in releases if not release.get("draft") and release.get("published_at")]
        if published:
            yield "release", published


def import_page(repository, kind: str, items: list[dict]) -> Counts:
    """Upsert one page of a list in a fixed number of queries (see ``importers.upsert_page``)."""
    if kind == "pull":
        return upsert_pull_requests(repository, items)
    if kind == "commit":
        return upsert_commits(repository, [rest_commit_fields(item) for item in items])
    return upsert_releases(repository, items)


def sync_repository(tracked: TrackedRepository, client: GitHubClient, *, since: datetime.datetime | None = None,
                    progress: Progress | None = None) -> Counts:
    """Upsert everything that changed since ``since`` (default: the last successful sync).

    Records an IngestionRun; on success moves ``last_synced_at`` to the time
    this poll started, so nothing that changed during the poll is skipped.
    """
    started = timezone.now()
    use_etag = since is None  # a backfill from an explicit date must not be cut short by a 304
    tracked.last_polled_at = started
    tracked.save(update_fields=["last_polled_at"])
    since = since or tracked.last_synced_at or started - FIRST_SYNC_WINDOW
    base = f"/repos/{tracked.repository.full_name}"
    with recorded_run(IngestionRun.Source.POLL, tracked.repository.full_name) as (_run, counts):
        tracked.default_branch = client.get_json(base)["default_branch"]
        for lister in (_pulls, _commits, _releases):
            for kind, items in lister(client, tracked, base, since, use_etag):
                counts.merge(import_page(tracked.repository, kind, items))
                if progress:
                    for _item in items:
                        progress(kind)
        tracked.last_synced_at = started
        tracked.save(update_fields=["default_branch", "last_synced_at", "etags"])
    return counts
