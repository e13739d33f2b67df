"""Read replicas (issue 29): what a streaming replica buys readers, how far behind it falls, and that
a client never reads an older version than the one it wrote.

Why: a replica is worth running only if it takes reads off the primary, stays close behind under the
write bursts webhooks bring (repojournal/replicas.py leaves out one more than DATABASE_REPLICA_MAX_LAG
seconds behind), and never shows a client that wrote an older version.

How: deploy/replica.py makes a streaming replica of the bench database's cluster on a free port in
a temporary directory (stopped and removed at the end, also on failure). Two topologies of ``make
up`` (deploy/topology.py, as bench/edge.py starts one) run side by side over the bench database, one
without DATABASE_REPLICA_URLS and one reading from the replica, so rounds alternate with no restart:

- token API lists, token API details and filtered lists (a reader's token) and searches (anonymous,
  a new pair of words each request), each by wrk on both app instances at once, without and with
  the replica in alternating rounds of one length. The replica's table scans (pg_stat_user_tables)
  during each "with" run show whether it served them: the "with" topology is its only reader;
- the replica's lag every ~100 ms while a burst of signed ``pull_request`` deliveries is posted to
  the edge as GitHub posts them and the workers process them, until the replica replayed it all:
  bytes (primary's ``pg_current_wal_lsn`` - replica's ``pg_last_wal_replay_lsn``) and seconds as
  the router measures them (``measure_lag``);
- read-your-writes: a client with a write token PUTs a draft digest with a new headline and GETs it
  at once through the edge, again and again. A GET with another headline or ETag than the PUT's is
  a violation, and ``python -m bench`` exits 1. A client that never writes reads it after each PUT:
  how often it saw the older version shows the replica was in the path the writer was kept off.
Skipped, saying why, without varnishd, Redis, a PostgreSQL on this machine or pg_basebackup."""
import contextlib
import copy
import datetime
import hashlib
import hmac
import json
import math
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import httpx
from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import connections

from accounts.models import ApiToken
from blog.models import Post
from digests.models import Digest, Topic
from ingestion.models import WebhookDelivery
from reader.caching import forget_version
from repojournal.replicas import PrimaryPositions, lsn, measure_lag

from . import edge, ingest, load
from .text import WORDS

REPLICA_SCRIPT = load.PROJECT_DIR / "deploy" / "replica.py"
#: The replica as a database alias of this process: its lag and its scans are read through it.
ALIAS = "bench_replica"
USERNAME = "bench-replicas"
API_PATHS = ["/api/v1/digests/?limit=20", "/api/v1/posts/?limit=20"]
#: wrk's path for request n: the next of a list, or a search for the next pair of words (231² pairs, each
#: app instance from its own half, the page cache's version dropped before each run: none is a hit).
NEXT_PATH = 'paths[n % #paths + 1]'
NEXT_SEARCH = '"/search/?q=" .. paths[n % #paths + 1] .. "+" .. paths[math.floor(n / #paths) % #paths + 1]'
SAMPLE_EVERY = 0.1
FLUSH_SECONDS = 1.5  # an idle PostgreSQL backend publishes its table counts within a second
POSTERS = 8  # connections posting the burst, as GitHub sends deliveries in parallel
LOCAL_HOSTS = ("", "127.0.0.1", "localhost", "::1")
#: A wrk script: report.lua's results line, each request's path from a counter.
LUA = """dofile({report})
local paths, n = {{{paths}}}, {start}
{headers}
function request()
  n = n + 1
  return wrk.format("GET", {path})
end
"""


def missing() -> str | None:
    reason = edge.missing()
    if reason:
        return reason
    host = settings.DATABASES["default"].get("HOST") or ""
    if host not in LOCAL_HOSTS and not host.startswith("/"):
        return f"PostgreSQL is on {host}: deploy/replica.py copies a cluster on this machine"
    if not (shutil.which("pg_basebackup") or list(Path("/usr/lib/postgresql").glob("*/bin/pg_basebackup"))):
        return "pg_basebackup is not installed (PostgreSQL's server programs: apt-get install postgresql)"
    return None


def replica_command(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(REPLICA_SCRIPT), *args], capture_output=True, text=True, timeout=900)


@contextlib.contextmanager
def replica():
    """A streaming replica of the bench database's cluster on a free port; (port, URL) while the block runs."""
    parent = Path(tempfile.mkdtemp(prefix="repojournal-bench-replica-"))
    parent.chmod(0o755)  # as root the cluster runs as postgres, which must reach its data directory
    data, port, primary = parent / "data", load.free_port(), os.environ["DATABASE_URL"]
    parts, user = urlsplit(primary), urlsplit(primary).netloc.rpartition("@")[0] or "postgres"
    try:
        started = replica_command("start", "--primary", primary, "--data", str(data), "--port", str(port))
        if started.returncode:
            raise RuntimeError(f"the replica did not start: {started.stdout}{started.stderr}")
        yield port, urlunsplit(parts._replace(netloc=f"{user}@127.0.0.1:{port}"))
    finally:
        replica_command("stop", "--data", str(data))
        shutil.rmtree(parent, ignore_errors=True)


@contextlib.contextmanager
def replica_alias(port: int):
    """The replica as ALIAS in this process (the bench's own reads stay on the primary: no router here)."""
    settings.DATABASES[ALIAS] = {**copy.deepcopy(settings.DATABASES["default"]), "HOST": "127.0.0.1", "PORT": str(port)}
    try:
        yield
    finally:
        connections[ALIAS].close()
        del settings.DATABASES[ALIAS]


@contextlib.contextmanager
def topology(directory: Path, static: Path, replica_urls: str = ""):
    """deploy/topology.py on free ports over the bench database, reading from `replica_urls` if any."""
    env = {
        **os.environ, "TOPOLOGY_DIR": str(directory), "EDGE_LISTEN": f"127.0.0.1:{load.free_port()}",
        "APP_PORT_1": str(load.free_port()), "APP_PORT_2": str(load.free_port()), "VARNISH_JAIL": "none",
        "GUNICORN_WORKERS": str(load.WORKERS), "DJANGO_SETTINGS_MODULE": "repojournal.settings.prod",
        "DJANGO_STATIC_ROOT": str(static), "GITHUB_WEBHOOK_SECRET": settings.GITHUB_WEBHOOK_SECRET,
        "DATABASE_REPLICA_URLS": replica_urls, **edge.UNTHROTTLED,
    }
    for name in ("DJANGO_SECRET_KEY", "REPLICAS", "REPLICA_PORT", "REPLICA_DATA_DIR"):  # no replica of its own
        env.pop(name, None)
    try:
        started = subprocess.run([sys.executable, str(edge.TOPOLOGY), "up", "--no-migrate"], env=env,
                                 capture_output=True, text=True)
        if started.returncode:
            raise RuntimeError(f"the topology did not start: {started.stdout}{started.stderr}")
        yield env
    finally:
        subprocess.run([sys.executable, str(edge.TOPOLOGY), "down"], env=env, capture_output=True)


def users() -> tuple[str, str, str]:
    """Tokens of a bench superuser: a reader's (no scope), a writer's (every scope), an observer's (read:drafts)."""
    get_user_model().objects.filter(username=USERNAME).delete()
    user = get_user_model().objects.create_superuser(USERNAME, f"{USERNAME}@example.com", None)
    return tuple(ApiToken.issue(user, name, scopes)[1] for name, scopes in (
        ("bench replicas reader", []), ("bench replicas writer", [scope.value for scope in ApiToken.Scope]),
        ("bench replicas observer", [ApiToken.Scope.READ_DRAFTS.value])))


def replica_scans() -> int:
    """Sequential and index scans of the bench database's tables on the replica: reads it served."""
    with connections[ALIAS].cursor() as cursor:
        cursor.execute("SELECT coalesce(sum(seq_scan + coalesce(idx_scan, 0)), 0) FROM pg_stat_user_tables")
        return int(cursor.fetchone()[0])


def loads(token: str) -> dict[str, tuple[list[str], dict, str]]:
    """What is loaded, by name: paths (or words), headers, the Lua expression of request n's path. The lists and
    the search run statements compiled once per process; details and filtered lists are ORM queries."""
    auth = {"Authorization": f"Bearer {token}"}
    digests = Digest.objects.published().order_by("-date").values_list("slug", flat=True)[:40]
    posts = Post.objects.published().order_by("-published_at").values_list("slug", flat=True)[:40]
    details = [*(f"/api/v1/digests/{slug}" for slug in digests), *(f"/api/v1/posts/{slug}" for slug in posts),
               *(f"/api/v1/digests/?limit=20&topic={slug}" for slug in Topic.objects.values_list("slug", flat=True))]
    return {"token API lists": (API_PATHS, auth, NEXT_PATH), "token API details and filtered lists": (
        details, auth, NEXT_PATH), "searches": (WORDS, {}, NEXT_SEARCH)}


def wrk_paths(base: str, load_: tuple, seconds: float, start: int = 0) -> load.Load:
    """wrk on `base` (1 thread, load.CONNECTIONS connections), request n's path from `load_` (see loads)."""
    paths, headers, path = load_
    script = LUA.format(report=json.dumps(str(load.LUA_SCRIPT)), paths=", ".join(map(json.dumps, paths)),
                        start=start, path=path, headers="\n".join(
                            f"wrk.headers[{json.dumps(name)}] = {json.dumps(value)}" for name, value in headers.items()))
    with tempfile.NamedTemporaryFile("w", suffix=".lua") as file:
        file.write(script)
        file.flush()
        command = [load.require_wrk(), "-t1", f"-c{load.CONNECTIONS}", f"-d{max(1, round(seconds))}s",
                   "--timeout", "10s", "-s", file.name, base]
        output = subprocess.run(command, capture_output=True, text=True, check=True).stdout
    data = json.loads(next(line for line in output.splitlines() if line.startswith("BENCH_JSON ")).split(" ", 1)[1])
    return load.Load(requests=data["requests"], seconds=data["duration_us"] / 1e6, p50_ms=data["p50_us"] / 1000,
                     p99_ms=data["p99_us"] / 1000, errors=sum(v for k, v in data.items() if k.startswith("errors_")))


def load_instances(env: dict, load_: tuple, seconds: float, warmup: float) -> dict:
    """Both app instances of a topology loaded at once (one wrk each, from its own half of the paths)."""
    bases = [f"http://127.0.0.1:{env[f'APP_PORT_{n}']}" for n in (1, 2)]
    if warmup >= 1:
        for base in bases:
            wrk_paths(base, load_, warmup, start=len(load_[0]) ** 2 // 4)
    forget_version()  # a search the warm-up (or an earlier run) made is not a page-cache hit now
    half = len(load_[0]) ** 2 // 2
    with ThreadPoolExecutor(len(bases)) as pool:
        runs = list(pool.map(lambda n: wrk_paths(bases[n], load_, seconds, start=n * half), range(len(bases))))
    return {"rps": sum(run.rps for run in runs), "p99_ms": max(run.p99_ms for run in runs),
            "errors": sum(run.errors for run in runs), "requests": sum(run.requests for run in runs)}


def throughput(plain: dict, replicated: dict, token: str, rounds: int, seconds: float, warmup: float) -> dict:
    """Each load per second without and with the replica, in alternating rounds; the replica's scans during
    each "with" run (read once its backends have flushed their counts, within a second of going idle)."""
    kinds, modes = loads(token), [("without", plain), ("with", replicated)]
    runs = {(kind, mode): [] for kind in kinds for mode, _ in modes}
    scans = dict.fromkeys(kinds, 0)
    for number in range(rounds):
        for mode, env in modes if number % 2 == 0 else modes[::-1]:
            for kind, load_ in kinds.items():
                before = replica_scans()
                runs[(kind, mode)].append(load_instances(env, load_, seconds, warmup))
                if mode == "with":
                    time.sleep(FLUSH_SECONDS)
                    scans[kind] += replica_scans() - before
    targets = []
    for kind, (paths, _, path) in kinds.items():
        without, with_ = runs[(kind, "without")], runs[(kind, "with")]
        rps = {mode: statistics.median(r["rps"] for r in runs[(kind, mode)]) for mode in ("without", "with")}
        targets.append({
            "name": kind, "paths": paths[:2] + [f"… {len(paths)} paths"][:len(paths) - 2] if path == NEXT_PATH else [
                f"/search/?q=<two of {len(paths)} words>"],
            "without_rps": round(rps["without"], 1), "with_rps": round(rps["with"], 1),
            "change": round(rps["with"] / rps["without"] - 1, 3) if rps["without"] else None,
            "without_rounds": [round(r["rps"], 1) for r in without], "with_rounds": [round(r["rps"], 1) for r in with_],
            "p99_ms": {"without": round(statistics.median(r["p99_ms"] for r in without), 2),
                       "with": round(statistics.median(r["p99_ms"] for r in with_), 2)},
            "errors": sum(r["errors"] for r in without + with_), "replica_scans": scans[kind],
            "replica_scans_per_request": round(scans[kind] / max(1, sum(r["requests"] for r in with_)), 2),
        })
    return {"rounds": rounds, "seconds": seconds, "instances": 2, "targets": targets}


def signed(body: bytes) -> str:
    return "sha256=" + hmac.new(settings.GITHUB_WEBHOOK_SECRET.encode(), body, hashlib.sha256).hexdigest()


def post_deliveries(edge_url: str, prefix: str, count: int) -> Counter:
    """`count` signed pull_request deliveries posted to the edge on POSTERS connections; their statuses."""
    template = json.loads(ingest.PR_WEBHOOK.read_text())
    numbers, lock, statuses = iter(range(count)), threading.Lock(), Counter()

    def poster():
        with httpx.Client(base_url=edge_url, timeout=10) as client:
            while True:
                with lock:
                    number = next(numbers, None)
                if number is None:
                    return
                body = ingest._delivery_body(300_000 + number, template)
                headers = {"Content-Type": "application/json", "X-GitHub-Event": "pull_request",
                           "X-GitHub-Delivery": f"{prefix}-{number}", "X-Hub-Signature-256": signed(body)}
                try:
                    status = client.post("/webhooks/github", content=body, headers=headers).status_code
                except httpx.HTTPError as error:
                    status = type(error).__name__
                with lock:
                    statuses[status] += 1

    with ThreadPoolExecutor(POSTERS) as pool:
        list(pool.map(lambda _: poster(), range(POSTERS)))
    return statuses


def wal_position(alias: str, function: str) -> int:
    with connections[alias].cursor() as cursor:
        cursor.execute(f"SELECT {function}()::text")
        return lsn(cursor.fetchone()[0])


def sample_lag(samples: list, stop: threading.Event) -> None:
    """Every SAMPLE_EVERY s: (time, bytes behind, seconds behind as the router measures them)."""
    positions = PrimaryPositions()
    try:
        while not stop.is_set():
            at = time.monotonic()
            behind = wal_position("default", "pg_current_wal_lsn") - wal_position(ALIAS, "pg_last_wal_replay_lsn")
            seconds = measure_lag(ALIAS, positions)
            samples.append((at, max(0, behind), None if math.isinf(seconds) else seconds))
            stop.wait(max(0.0, SAMPLE_EVERY - (time.monotonic() - at)))
    finally:
        connections.close_all()  # this thread's own connections


def lag_during_burst(edge_url: str, count: int, timeout: float = 600.0) -> dict:
    """The replica's lag while `count` deliveries are posted and processed, until it has replayed everything."""
    ingest.fresh_repository(ingest.BENCH_REPOSITORY)
    prefix = f"bench-replicas-{uuid.uuid4().hex[:8]}"
    samples, stop = [], threading.Event()
    sampler = threading.Thread(target=sample_lag, args=(samples, stop))
    started = time.monotonic()
    sampler.start()
    try:
        statuses = post_deliveries(edge_url, prefix, count)
        posted = time.monotonic()
        accepted = sum(number for status, number in statuses.items() if status in (200, 202))
        processed = WebhookDelivery.objects.filter(guid__startswith=prefix, processed_at__isnull=False)
        while processed.count() < accepted and time.monotonic() - started < timeout:
            time.sleep(0.2)
        done = time.monotonic()
        caught_up = None
        while caught_up is None and time.monotonic() - done < 120 and sampler.is_alive():
            caught_up = next((at for at, behind, _ in samples if at >= done and behind == 0), None)
            time.sleep(SAMPLE_EVERY)
    finally:
        stop.set()
        sampler.join()
    during = [sample for sample in samples if caught_up is None or sample[0] <= caught_up]
    seconds = sorted(lag for _, _, lag in during if lag is not None)
    return {
        "deliveries": count, "statuses": {str(status): number for status, number in statuses.items()},
        "processed": processed.count(), "posting_seconds": round(posted - started, 2),
        "processed_seconds": round(done - started, 2),
        "caught_up_after_processing_s": None if caught_up is None else round(max(0.0, caught_up - done), 2),
        "samples": len(during), "max_lag_s": round(seconds[-1], 3) if seconds else None,
        "p95_lag_s": round(seconds[int(0.95 * (len(seconds) - 1))], 3) if seconds else None,
        "max_lag_bytes": max((behind for _, behind, _ in during), default=None),
        "samples_over_max_lag": sum(lag > settings.DATABASE_REPLICA_MAX_LAG for lag in seconds),
        "max_lag_setting_s": settings.DATABASE_REPLICA_MAX_LAG}


def draft_digest() -> dict:
    """A new draft digest's fields on a day no digest of its topic has."""
    topic = Topic.objects.order_by("pk").first()
    day = datetime.date(2099, 1, 1)
    while Digest.objects.filter(topic=topic, date=day).exists():
        day += datetime.timedelta(days=1)
    return {"topic": {"slug": topic.slug}, "date": day.isoformat(), "slug": f"bench-replicas-{uuid.uuid4().hex[:8]}",
            "headline": "Read your writes", "summary": "A draft the bench rewrites and reads back."}


def read_your_writes(edge_url: str, writer: str, observer: str, writes: int) -> dict:
    """A writer PUTs a new headline and GETs the digest at once, `writes` times, through the edge."""
    violations, failed_writes, stale, examples = 0, 0, 0, []
    mine, theirs = (httpx.Client(base_url=f"{edge_url}/api/v1", timeout=15,
                                 headers={"Authorization": f"Bearer {token}"}) for token in (writer, observer))
    fields, scans = draft_digest(), replica_scans()
    try:
        created = mine.post("/digests/", json=fields)
        if created.status_code != 201:
            raise RuntimeError(f"the draft digest was not created: {created.status_code} {created.text[:300]}")
        current, path = created.json(), f"/digests/{fields['slug']}"
        for number in range(writes):
            headline = f"Read your writes {number}"
            put = mine.put(path, json={**current, "headline": headline})
            if put.status_code != 200:
                failed_writes += 1
                examples.append(f"PUT {number}: {put.status_code} {put.text[:200]}")
                continue
            current = put.json()
            got = mine.get(path)
            seen = got.json().get("headline") if got.status_code == 200 else got.status_code
            if seen != headline or got.headers.get("ETag") != put.headers.get("ETag"):
                violations += 1
                examples.append(f"GET {number}: {seen!r} ETag {got.headers.get('ETag')} after PUT "
                                f"{headline!r} ETag {put.headers.get('ETag')}")
            other = theirs.get(path)
            stale += other.status_code != 200 or other.json().get("headline") != headline
    finally:
        mine.close(), theirs.close()
        Digest.objects.filter(slug=fields["slug"]).delete()
    time.sleep(FLUSH_SECONDS)
    return {"writes": writes, "failed_writes": failed_writes, "violations": violations, "examples": examples[:3],
            "other_client_saw_older": stale, "replica_scans": replica_scans() - scans}


def measure(rounds: int, seconds: float, warmup: float, deliveries: int, writes: int) -> dict:
    reason = missing()
    if reason:
        return {"skipped": reason}
    reader, writer, observer = users()
    directory = Path(tempfile.mkdtemp(prefix="repojournal-bench-replicas-"))
    try:
        with contextlib.ExitStack() as stack:
            port, url = stack.enter_context(replica())
            stack.enter_context(replica_alias(port))
            plain = stack.enter_context(topology(directory / "plain", directory / "static"))
            replicated = stack.enter_context(topology(directory / "replicated", directory / "static", url))
            edge_url = f"http://{replicated['EDGE_LISTEN']}"
            return {"throughput": throughput(plain, replicated, reader, rounds, seconds, warmup),
                    "lag_during_burst": lag_during_burst(edge_url, deliveries),
                    "read_your_writes": read_your_writes(edge_url, writer, observer, writes)}
    finally:
        ingest.cleanup()
        get_user_model().objects.filter(username=USERNAME).delete()
        shutil.rmtree(directory, ignore_errors=True)
