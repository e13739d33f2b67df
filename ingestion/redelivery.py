"""Getting back the deliveries GitHub failed to hand us: GitHub does not retry them by itself.

GitHub's documented recipe ("Handling failed webhook deliveries"): list the
hook's recent deliveries (``GET /repos/{owner}/{repo}/hooks/{hook_id}/deliveries``,
newest first, paginated by ``Link`` cursors), find those that failed, and ask
for each again (``POST .../deliveries/{delivery_id}/attempts``, answered 202).
A redelivery carries the original GUID, so "failed" means: no attempt with that
GUID got a 2xx, and we never stored it (webhooks answer 503 when they cannot).

Each GUID is requested at most once per ``INGESTION_REDELIVERY_WINDOW`` (a
``RedeliveryRequest`` records it), so a beat every few minutes never asks
twice while GitHub is still resending. Requests go through ``GitHubClient``
under the token's lock, like polls: one request at a time, waiting out rate
limits as GitHub asks. Organisation hooks are not covered: we track
repositories only.
"""
import datetime

from django.conf import settings
from django.utils import timezone
from django.utils.dateparse import parse_datetime

from .github import GitHubClient, GitHubError
from .importers import Counts
from .models import IngestionRun, RedeliveryRequest, TrackedRepository, WebhookDelivery
from .runs import recorded_run

PER_PAGE = 100


def succeeded(attempt: dict) -> bool:
    return 200 <= (attempt.get("status_code") or 0) < 300


def failed_attempts(client: GitHubClient, url: str, since: datetime.datetime) -> dict[str, dict]:
    """The newest attempt of each GUID delivered since ``since`` that no attempt got through, by GUID."""
    newest: dict[str, dict] = {}
    through: set[str] = set()
    for page in client.pages(url, {"per_page": PER_PAGE}):
        for attempt in page.items:
            delivered_at = parse_datetime(attempt.get("delivered_at") or "")
            if delivered_at is not None and delivered_at < since:
                return {guid: item for guid, item in newest.items() if guid not in through}
            if succeeded(attempt):
                through.add(attempt["guid"])
            newest.setdefault(attempt["guid"], attempt)
    return {guid: item for guid, item in newest.items() if guid not in through}


def still_missing(tracked: TrackedRepository, failed: dict[str, dict], now: datetime.datetime) -> list[dict]:
    """Failed attempts whose GUID we never stored and have not requested within the window."""
    guids = list(failed)
    stored = set(WebhookDelivery.objects.filter(guid__in=guids).values_list("guid", flat=True))
    window_start = now - datetime.timedelta(seconds=settings.INGESTION_REDELIVERY_WINDOW)
    requested = set(RedeliveryRequest.objects.filter(tracked=tracked, guid__in=guids,
                                                     requested_at__gte=window_start).values_list("guid", flat=True))
    return [failed[guid] for guid in guids if guid not in stored and guid not in requested]


def redeliver_failed(tracked: TrackedRepository, client: GitHubClient, *,
                     now: datetime.datetime | None = None) -> Counts:
    """Request a redelivery of every missing failed delivery of the tracked repository's hook.

    Recorded as an IngestionRun: ``created`` counts the redeliveries requested,
    ``unchanged`` the failed attempts skipped (stored since, or requested within
    the window); a request GitHub refuses is listed in the run's error.
    """
    now = now or timezone.now()
    base = f"/repos/{tracked.repository.full_name}/hooks/{tracked.hook_id}/deliveries"
    since = now - datetime.timedelta(seconds=settings.INGESTION_REDELIVERY_LOOKBACK)
    with recorded_run(IngestionRun.Source.REDELIVERY, f"{tracked.repository.full_name} hook {tracked.hook_id}") as (
            run, counts):
        failed = failed_attempts(client, base, since)
        missing = still_missing(tracked, failed, now)
        counts.unchanged = len(failed) - len(missing)
        refused = [refusal for attempt in missing if (refusal := _request(tracked, client, base, attempt))]
        counts.created = len(missing) - len(refused)
        run.error = "\n".join(refused)
    return counts


def _request(tracked: TrackedRepository, client: GitHubClient, base: str, attempt: dict) -> str:
    """POST one redelivery and record it; returns why GitHub refused it, or ""."""
    try:
        client.post(f"{base}/{attempt['id']}/attempts")
        refusal = ""
    except GitHubError as exc:
        refusal = f"{attempt['guid']}: {exc}"
    RedeliveryRequest.objects.create(
        tracked=tracked, guid=attempt["guid"][:100], delivery_id=attempt["id"], event=(attempt.get("event") or "")[:50],
        status_code=attempt.get("status_code") or 0, accepted=not refusal,
    )
    return refusal


def redeliver_all(client: GitHubClient) -> Counts:
    """Every enabled repository with a hook id; one repository's error does not stop the others."""
    total = Counts()
    for tracked in TrackedRepository.objects.enabled().exclude(hook_id=None).select_related("repository"):
        try:
            total.merge(redeliver_failed(tracked, client))
        except GitHubError:
            continue  # recorded as a failed run; the next beat tries again
    return total
