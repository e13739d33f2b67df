"""Ingestion throughput: references stored per second from a recorded PR listing, deliveries per second
through a real Celery worker.

The listing is PyGithub's recording of ``GET /repos/{owner}/{repo}/pulls``
(tests/fixtures/github/rest, vendored), repeated with fresh PR numbers until it is as
long as asked, and imported as the poller imports it: a page of ``PER_PAGE`` at
a time through ``polling.import_page`` (one batch upsert and one transaction per
page). Importing it a second time measures a re-poll, where nothing changed.
"""
import contextlib
import copy
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from django.conf import settings

from digests.models import Reference, Repository
from ingestion import webhooks
from ingestion.importers import Counts
from ingestion.models import IngestionRun, TrackedRepository, WebhookDelivery
from ingestion.polling import PER_PAGE, import_page

from tests.fixtures import REST_RECORDINGS, WEBHOOK_PAYLOADS

from .load import PROJECT_DIR

PR_LISTING = REST_RECORDINGS / "Issue131.testGetPullsWithOrgHeadUser.txt"
PR_WEBHOOK = WEBHOOK_PAYLOADS / "pull_request.opened.payload.json"
BENCH_REPOSITORY = "bench-ingest/listing"


def recorded_pulls(path: Path = PR_LISTING) -> list[dict]:
    """Every pull request object in the recorded list responses (a record's body is its 10th line)."""
    lines = path.read_text().split("\n")
    pulls = []
    for index, line in enumerate(lines):
        if line in ("http", "https") and "/pulls" in lines[index + 4] and index + 9 < len(lines):
            body = lines[index + 9]
            if body.startswith("["):
                pulls += json.loads(body)
    return pulls


def listing(count: int) -> list[dict]:
    """`count` pull requests: the recorded ones, repeated with new numbers."""
    recorded = recorded_pulls()
    pulls = []
    for number in range(1, count + 1):
        pull = copy.deepcopy(recorded[number % len(recorded)])
        pull["number"] = number
        pulls.append(pull)
    return pulls


def fresh_repository(full_name: str) -> Repository:
    repository, _ = Repository.objects.get_or_create_by_full_name(full_name)
    Reference.objects.filter(repository=repository).delete()
    TrackedRepository.objects.get_or_create(repository=repository, defaults={"default_branch": "main"})
    return repository


def import_listing(repository: Repository, pulls: list[dict]) -> tuple[Counts, float]:
    """Import `pulls` page by page as the poller does; the counts and the seconds it took."""
    counts = Counts()
    started = time.perf_counter()
    for start in range(0, len(pulls), PER_PAGE):
        counts.merge(import_page(repository, "pull", pulls[start:start + PER_PAGE]))
    return counts, time.perf_counter() - started


def references_per_second(count: int) -> dict:
    """Import a `count`-long recorded listing into an empty repository, then again; time only the imports."""
    repository = fresh_repository(BENCH_REPOSITORY)
    pulls = listing(count)
    counts, seconds = import_listing(repository, pulls)
    stored = Reference.objects.filter(repository=repository).count()
    again, again_seconds = import_listing(repository, pulls)
    return {"listing_items": count, "per_page": PER_PAGE, "created": counts.created, "stored": stored,
            "seconds": round(seconds, 3), "references_per_second": round(stored / seconds, 1),
            "repoll_unchanged": again.unchanged, "repoll_items_per_second": round(count / again_seconds, 1)}


def _delivery_body(number: int, template: dict) -> bytes:
    payload = copy.deepcopy(template)
    payload["number"] = payload["pull_request"]["number"] = number
    payload["repository"]["full_name"] = BENCH_REPOSITORY
    return json.dumps(payload).encode()


def store_deliveries(count: int) -> list[int]:
    """Store `count` signed PR deliveries as the endpoint would, without queueing them."""
    template = json.loads(PR_WEBHOOK.read_text())
    ids = []
    for number in range(100_000, 100_000 + count):
        body = _delivery_body(number, template)
        delivery = WebhookDelivery.objects.create(
            guid=f"bench-{time.time_ns()}-{number}", event="pull_request", action="opened",
            repository_full_name=BENCH_REPOSITORY, headers={"X-GitHub-Event": "pull_request"}, body=body,
        )
        ids.append(delivery.pk)
    return ids


@contextlib.contextmanager
def celery_worker(concurrency: int = 2):
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "repojournal.settings.bench"}
    command = [sys.executable, "-m", "celery", "-A", "repojournal", "worker", "--loglevel", "warning",
               "--concurrency", str(concurrency), "--pool", "prefork", "--without-gossip", "--without-mingle"]
    process = subprocess.Popen(command, env=env, cwd=PROJECT_DIR, start_new_session=True,
                               stdout=subprocess.DEVNULL)
    try:
        yield process
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(timeout=60)


def deliveries_per_second(count: int, timeout: float = 300) -> dict:
    """Queue `count` stored deliveries to a real worker; rate between the first and last finish."""
    if not settings.REDIS_URL:
        return {"skipped": "no REDIS_URL: Celery runs inline, there is no worker to measure"}
    fresh_repository(BENCH_REPOSITORY)
    ids = store_deliveries(count)
    with celery_worker():
        for delivery_id in ids:
            webhooks.enqueue(delivery_id)
        deadline = time.monotonic() + timeout
        pending = WebhookDelivery.objects.filter(pk__in=ids, processed_at__isnull=True)
        while pending.exists() and time.monotonic() < deadline:
            time.sleep(0.2)
    finished = list(WebhookDelivery.objects.filter(pk__in=ids, processed_at__isnull=False)
                    .order_by("processed_at").values_list("processed_at", "state"))
    span = (finished[-1][0] - finished[0][0]).total_seconds() if len(finished) > 1 else 0
    processed = sum(1 for _, state in finished if state == WebhookDelivery.State.PROCESSED)
    return {"deliveries": count, "processed": processed, "finished": len(finished), "seconds": round(span, 3),
            "deliveries_per_second": round((len(finished) - 1) / span, 1) if span else None,
            "worker_concurrency": 2}


def cleanup() -> None:
    IngestionRun.objects.filter(subject__startswith="bench-").delete()
    WebhookDelivery.objects.filter(guid__startswith="bench-").delete()


def measure(listing_items: int, deliveries: int) -> dict:
    try:
        return {"references": references_per_second(listing_items),
                "deliveries": deliveries_per_second(deliveries)}
    finally:
        cleanup()
