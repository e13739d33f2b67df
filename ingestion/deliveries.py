"""Processing stored GitHub deliveries into References.

A delivery is processed at most once: processing locks the row and skips
anything already done, so the periodic sweep and a retried task can never
double an import. ``ingestion.webhooks`` stores deliveries; the tasks in
``ingestion.tasks`` call this module.
"""
import datetime

from django.db import transaction
from django.utils import timezone

from .importers import Counts, push_commit_fields, upsert_commit, upsert_issue, upsert_pull_request, upsert_release
from .models import IngestionRun, TrackedRepository, WebhookDelivery

State = WebhookDelivery.State
PULL_REQUEST_ACTIONS = {"opened", "edited", "labeled", "unlabeled", "reopened", "synchronize", "closed"}
ISSUE_ACTIONS = {"opened", "closed"}
ZERO_SHA = "0" * 40


#: Tries of a delivery that fails: the first, then one after each of RETRY_DELAYS.
RETRY_DELAYS = [datetime.timedelta(seconds=30 * 2**n) for n in range(5)]  # 30 s, 1, 2, 4, 8 min


def pending_for_sweep(older_than_seconds: int):
    """What the sweep queues: deliveries whose task was lost or never sent, and failed ones whose retry is due."""
    return WebhookDelivery.objects.lost_or_due(datetime.timedelta(seconds=older_than_seconds))


def retry_at(attempts: int):
    """When a delivery that failed for the ``attempts``-th time is tried again; None after the last try."""
    return timezone.now() + RETRY_DELAYS[attempts - 1] if attempts <= len(RETRY_DELAYS) else None


def process_delivery(delivery_id: int, *, force: bool = False) -> WebhookDelivery | None:
    """Process one stored delivery into References, recording an IngestionRun.

    Skips deliveries already processed or ignored unless ``force`` (the admin's
    "reprocess"); a failure is recorded on the delivery, with the time of its next
    try (``retry_at``: the sweep queues it then), and re-raised.
    """
    try:
        with transaction.atomic():
            delivery = WebhookDelivery.objects.select_for_update().filter(pk=delivery_id).first()
            if delivery is None or (not force and delivery.state in (State.PROCESSED, State.IGNORED)):
                return None
            state, detail, counts = handle(delivery)
            _record(delivery, state, detail, counts)
            return delivery
    except Exception as exc:
        delivery = WebhookDelivery.objects.get(pk=delivery_id)
        _record(delivery, State.FAILED, f"{type(exc).__name__}: {exc}", Counts())
        raise


def _record(delivery: WebhookDelivery, state: str, detail: str, counts: Counts) -> None:
    delivery.attempts += 1
    delivery.finish(state, detail, retry_at=retry_at(delivery.attempts) if state == State.FAILED else None)
    run_status = {State.PROCESSED: "succeeded", State.IGNORED: "ignored", State.FAILED: "failed"}[state]
    IngestionRun.objects.create(
        source=IngestionRun.Source.WEBHOOK, subject=delivery.guid, delivery=delivery, status=run_status,
        finished_at=timezone.now(), error=detail if state == State.FAILED else "", **counts.as_dict(),
    )


def handle(delivery: WebhookDelivery) -> tuple[str, str, Counts]:
    """Dispatch on the event; returns (state, detail, counts)."""
    payload = delivery.payload()
    if delivery.event == "ping":
        return State.PROCESSED, f"ping from hook {payload.get('hook_id', '?')}: {payload.get('zen', '')}", Counts()
    handler = HANDLERS.get(delivery.event)
    if handler is None:
        return State.IGNORED, f"event “{delivery.event}” is not handled", Counts()
    tracked = TrackedRepository.objects.for_full_name(delivery.repository_full_name)
    if tracked is None:
        return State.IGNORED, f"repository “{delivery.repository_full_name}” is not tracked", Counts()
    return handler(tracked, payload)


def _ignored(detail: str) -> tuple[str, str, Counts]:
    return State.IGNORED, detail, Counts()


def _one(outcome: str) -> tuple[str, str, Counts]:
    counts = Counts()
    counts.add(outcome)
    return State.PROCESSED, outcome, counts


def handle_pull_request(tracked: TrackedRepository, payload: dict):
    if payload.get("action") not in PULL_REQUEST_ACTIONS:
        return _ignored(f"pull_request action “{payload.get('action')}” is not handled")
    return _one(upsert_pull_request(tracked.repository, payload["pull_request"]))


def handle_issues(tracked: TrackedRepository, payload: dict):
    if payload.get("action") not in ISSUE_ACTIONS:
        return _ignored(f"issues action “{payload.get('action')}” is not handled")
    return _one(upsert_issue(tracked.repository, payload["issue"]))


def handle_release(tracked: TrackedRepository, payload: dict):
    if payload.get("action") != "published":
        return _ignored(f"release action “{payload.get('action')}” is not handled")
    return _one(upsert_release(tracked.repository, payload["release"]))


def handle_push(tracked: TrackedRepository, payload: dict):
    """Commits pushed to the default branch.

    Tag pushes and other branches are not ours; a deletion carries no commits,
    and a branch creation carries none that are new (its commits came with
    earlier pushes; the next poll reconciles anything else).
    """
    default_branch = payload["repository"].get("default_branch") or tracked.default_branch
    if payload.get("deleted") or payload.get("after") == ZERO_SHA:
        return _ignored(f"{payload.get('ref')} was deleted")
    if payload.get("created") or payload.get("before") == ZERO_SHA:
        return _ignored(f"{payload.get('ref')} was created: no new commits")
    if payload.get("ref") != f"refs/heads/{default_branch}":
        return _ignored(f"{payload.get('ref')} is not the default branch ({default_branch})")
    counts = Counts()
    for commit in payload.get("commits") or []:
        counts.add(upsert_commit(tracked.repository, push_commit_fields(commit)))
    return State.PROCESSED, f"{len(payload.get('commits') or [])} commit(s)", counts


HANDLERS = {
    "pull_request": handle_pull_request,
    "issues": handle_issues,
    "release": handle_release,
    "push": handle_push,
}
