"""A minute at 64 connections through the edge: no errors, and the worker's memory does not grow.

The edge is Varnish with the production VCL in front of the topology's two gunicorn
instances (stack.py: `make up`'s processes under supervisord). Each connection
alternates a signed GitHub delivery (passed through to the app, stored, queued for
the workers) and a reader page (served by the edge once cached), as a site linked
from a busy front page would see while its repositories are active. Every request
has GitHub's 10 s to answer; an error is any other answer than 2xx or a timeout.
The workers' resident memory (main processes and pools) is read after a warm-up and
again once the minute is over, while they work through the backlog.

Needs ``varnishd`` (Debian's ``varnish`` package; ``.ci/run`` installs it).
"""
import itertools
import shutil
import threading
import time
import uuid
from collections import Counter
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from .github_fake import sign
from .stack import SECRET
from .test_outages import payloads, processing

CONNECTIONS = 64
SECONDS = 60
WARM_UP = 10
DRAIN_DEADLINE = 600  # seconds for the worker to finish the backlog the minute left
# The stack publishes nothing, so these are the pages that exist on it (a topic or repository page
# only once a published digest cites it).
READER_PAGES = ["/", "/wire/", "/posts/", "/topics/", "/tags/", "/search/?q=hello", "/posts/feed.atom",
                "/wire/feed.atom", "/sitemap.xml", "/robots.txt"]
BEHIND_TLS = {"X-Forwarded-Proto": "https"}  # the TLS terminator in front of the edge says so

pytestmark = pytest.mark.skipif(not shutil.which("varnishd"),
                                reason="varnishd is not installed (apt-get install varnish; .ci/run installs it)")


class Tally:
    def __init__(self):
        self.lock = threading.Lock()
        self.deliveries = self.pages = 0
        self.errors: list = []
        self.accepted: set[str] = set()

    def count(self, kind: str, outcome, guid: str = "") -> None:
        with self.lock:
            if outcome in (200, 202):
                setattr(self, kind, getattr(self, kind) + 1)
                if guid:
                    self.accepted.add(guid)
            else:
                self.errors.append((kind, outcome))


def hammer(edge_url: str, seconds: float) -> Tally:
    """On CONNECTIONS connections for ``seconds``: a signed delivery, then a reader page, again and again."""
    deadline = time.monotonic() + seconds
    prefix, numbers, lock = uuid.uuid4().hex[:8], itertools.count(), threading.Lock()
    bodies, pages = payloads(), itertools.cycle(READER_PAGES)
    tally = Tally()

    def request(http: httpx.Client, kind: str, method: str, url: str, guid: str = "", **kwargs) -> None:
        try:
            outcome = http.request(method, url, **kwargs).status_code
        except httpx.HTTPError as exc:
            outcome = type(exc).__name__
        tally.count(kind, outcome, guid)

    def connection():
        with httpx.Client(base_url=edge_url, timeout=10.0, headers=BEHIND_TLS) as http:  # GitHub's own timeout
            while time.monotonic() < deadline:
                with lock:
                    event, body = next(bodies)
                    guid, page = f"load-{prefix}-{next(numbers)}", next(pages)
                headers = {"X-GitHub-Event": event, "X-GitHub-Delivery": guid,
                           "X-Hub-Signature-256": sign(body, SECRET), "Content-Type": "application/json"}
                request(http, "deliveries", "POST", "/webhooks/github", guid, content=body, headers=headers)
                request(http, "pages", "GET", page)

    with ThreadPoolExecutor(max_workers=CONNECTIONS) as pool:
        for _ in range(CONNECTIONS):
            pool.submit(connection)
    return tally


def test_a_minute_at_64_connections_through_the_edge_has_no_errors_and_no_worker_memory_growth(stack, github):
    """``github``: the fake answers the beat's redelivery task (it finds nothing to ask for)."""
    hammer(stack.edge_url, WARM_UP)  # the pool's processes load what they need once; the edge fills
    time.sleep(5)
    before = stack.worker_memory_kib()
    tally = hammer(stack.edge_url, SECONDS)
    after_minute = stack.worker_memory_kib()
    drained = drain(stack, tally.accepted)
    after = max(after_minute, stack.worker_memory_kib())
    growth = (after - before) / before
    print(f"\n[faults] load through the edge: {tally.deliveries} deliveries and {tally.pages} pages in {SECONDS} s "
          f"on {CONNECTIONS} connections ({(tally.deliveries + tally.pages) / SECONDS:.0f} requests/s), "
          f"{len(tally.errors)} errors; backlog processed {drained:.0f} s after the minute; "
          f"worker {before // 1024} MiB -> {after // 1024} MiB ({growth:+.1%})")
    assert tally.errors == [], Counter(tally.errors).most_common(5)
    assert tally.deliveries > 0 and tally.pages > 0
    assert growth < 0.10


def drain(stack, guids: set[str]) -> float:
    """Seconds until every accepted delivery is processed; fails on one lost or processed twice.

    It also waits for the broker's queue to empty, so the outage tests that follow
    start on an idle stack: while the backlog lasted, the sweep queued deliveries
    that had waited longer than ``INGESTION_SWEEP_AFTER`` once more, and those
    extra messages (each skipped at once: already processed) outlast the backlog.
    """
    started = time.monotonic()
    while time.monotonic() < started + DRAIN_DEADLINE:
        counts = processing(stack, guids)
        if all(count >= 1 for count in counts.values()) and stack.queued_messages() == 0:
            assert {guid: count for guid, count in counts.items() if count != 1} == {}, "processed twice"
            return time.monotonic() - started
        time.sleep(2)
    missing = sorted(guid for guid, count in processing(stack, guids).items() if count == 0)
    pytest.fail(f"{len(missing)} of {len(guids)} accepted deliveries unprocessed {DRAIN_DEADLINE} s after the load")
