"""The page cache's hit ratio while GitHub keeps sending webhooks (issue 19).

Every delivery a worker processes saves a reference. When any such save dropped
the whole page cache, a site receiving a webhook every few seconds served most
readers from the database. Now only writes readers can see drop it, so the ratio
should stay near what the same reading gets with no webhooks at all. A real
worker processes real signed deliveries of new pull requests (a tracked
repository, references no published digest cites) while one reader walks the
listing pages; ``X-Page-Cache`` on each response says hit or miss.
"""
import hashlib
import hmac
import itertools
import json
import threading
import time
import urllib.request
import uuid

from django.conf import settings

from .ingest import BENCH_REPOSITORY, PR_WEBHOOK, _delivery_body, celery_worker, fresh_repository
from .load import gunicorn
from .targets import phase_settings


def measure(paths: list[str], seconds: float = 20, every: float = 2.0) -> dict:
    """Reading `paths` round-robin for `seconds`, with a webhook every `every` seconds and without."""
    if not settings.REDIS_URL:
        return {"skipped": "no REDIS_URL: Celery runs inline and there is no shared cache to measure"}
    fresh_repository(BENCH_REPOSITORY)
    env = {name: str(int(value) if isinstance(value, bool) else value) for name, value in phase_settings("warm").items()}
    with gunicorn(env) as base, celery_worker(concurrency=1):
        quiet = _read(base, paths, seconds)
        stop, sent = threading.Event(), []
        sender = threading.Thread(target=_send_webhooks, args=(base, every, stop, sent), daemon=True)
        sender.start()
        try:
            busy = _read(base, paths, seconds)
        finally:
            stop.set()
            sender.join(10)
    return {"seconds": seconds, "webhook_every_seconds": every, "webhooks_sent": len(sent),
            "hit_ratio_without_webhooks": quiet, "hit_ratio_with_webhooks": busy}


def _read(base: str, paths: list[str], seconds: float) -> float:
    """The share of page-cache hits among the pages read (the first read of each path warms it)."""
    for path in paths:
        urllib.request.urlopen(base + path, timeout=10).read()
    hits = total = 0
    deadline = time.monotonic() + seconds
    for path in itertools.cycle(paths):
        if time.monotonic() >= deadline:
            break
        with urllib.request.urlopen(base + path, timeout=10) as response:
            response.read()
            hits += response.headers.get("X-Page-Cache") == "hit"
            total += 1
    return round(hits / total, 4) if total else 0.0


def _send_webhooks(base: str, every: float, stop: threading.Event, sent: list) -> None:
    template = json.loads(PR_WEBHOOK.read_text())
    secret = settings.GITHUB_WEBHOOK_SECRET.encode()
    for number in itertools.count(200_000):
        if stop.wait(every):
            return
        body = _delivery_body(number, template)
        request = urllib.request.Request(base + "/webhooks/github", data=body, method="POST", headers={
            "Content-Type": "application/json", "X-GitHub-Event": "pull_request",
            "X-GitHub-Delivery": str(uuid.uuid4()),
            "X-Hub-Signature-256": "sha256=" + hmac.new(secret, body, hashlib.sha256).hexdigest(),
        })
        with urllib.request.urlopen(request, timeout=10) as response:
            sent.append(response.status)
