"""The edge (issue 16): Varnish in front of two app instances, measured through the real thing.

The topology is `make up`'s (deploy/topology.py: Varnish, two gunicorns with production
settings, two Celery workers, one beat) on free ports over the bench database. Measured:
edge hits for home, a post page, a tag page and the posts feed (loaded as a browser asks, with
gzip) as ratios to the minimal Django view served by the bench's own gunicorn in the same rounds,
with each page's bytes compressed and not; publish -> visible to an anonymous reader at the
edge; the edge's hit ratio while a post is edited every second (each edit's status recorded);
and failed requests while one app instance is killed under load. Without varnishd (or without
PostgreSQL and Redis, which the app processes share with the bench) it is skipped, saying why.
"""
import contextlib
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

import httpx
from django.conf import settings

from . import load
from .targets import Target, phase_settings

TOPOLOGY = load.PROJECT_DIR / "deploy" / "topology.py"
EDGE_TARGETS = ("home", "post page", "tag page 1", "posts atom feed")
#: What a browser sends: the edge's hits are loaded, and their bytes counted, as browsers receive them.
BROWSER = {"Accept-Encoding": "gzip, deflate, br"}
#: As the bench's own settings do (repojournal/settings/bench.py), API throttles too high to answer 429,
#: still running. The phase's publishes and edits all come from one address (127.0.0.1) within a minute:
#: production's 60 writes a minute per address refused every edit past the 60th (issue 25).
UNTHROTTLED = {f"API_RATE_{scope}": "1000000/s" for scope in ("LIST_IP", "LIST_TOKEN", "WRITE_IP", "WRITE_TOKEN")}


def missing() -> str | None:
    if not shutil.which("varnishd"):
        return "varnishd is not installed (apt-get install varnish varnish-modules; make up does this)"
    if settings.DATABASES["default"]["ENGINE"] != "django.db.backends.postgresql" or not settings.REDIS_URL:
        return "the edge's app processes share the bench's data: needs PostgreSQL and Redis"
    return None


@contextlib.contextmanager
def topology():
    """The running topology (deploy/topology.py) on free ports; its environment while the block runs."""
    directory = tempfile.mkdtemp(prefix="repojournal-edge-")
    env = {
        **os.environ, "TOPOLOGY_DIR": directory, "EDGE_LISTEN": f"127.0.0.1:{load.free_port()}",
        "APP_PORT_1": str(load.free_port()), "APP_PORT_2": str(load.free_port()), "VARNISH_JAIL": "none",
        "GUNICORN_WORKERS": str(load.WORKERS), "DJANGO_SETTINGS_MODULE": "repojournal.settings.prod",
        "DJANGO_STATIC_ROOT": str(Path(directory) / "static"), **UNTHROTTLED,
    }
    env.pop("DJANGO_SECRET_KEY", None)
    try:
        started = subprocess.run([sys.executable, str(TOPOLOGY), "up", "--no-migrate"], env=env,
                                 capture_output=True, text=True)
        if started.returncode:
            raise RuntimeError(f"the edge topology did not start: {started.stdout}{started.stderr}")
        yield env
    finally:
        subprocess.run([sys.executable, str(TOPOLOGY), "down"], env=env, capture_output=True)
        shutil.rmtree(directory, ignore_errors=True)


def page_bytes(url: str) -> dict:
    """Bytes of the body on the wire: as a browser gets it (Accept-Encoding) and uncompressed."""
    found = {}
    for name, headers in (("compressed", BROWSER), ("uncompressed", {"Accept-Encoding": "identity"})):
        with httpx.stream("GET", url, headers=headers, timeout=10) as response:
            found[name] = sum(len(chunk) for chunk in response.iter_raw())
            if name == "compressed":
                found["encoding"] = response.headers.get("Content-Encoding", "none")
    return found


def throughput(targets: list[Target], edge: str, rounds: int, seconds: float) -> list[dict]:
    """Edge hits vs the baseline view, alternating round by round like the other phases; bytes per page."""
    by_name = {target.name: target for target in targets}
    measured = [by_name["baseline"], *(by_name[name] for name in EDGE_TARGETS)]
    runs: dict[str, list[load.Load]] = {target.name: [] for target in measured}
    env = {name: str(int(value) if isinstance(value, bool) else value) for name, value in phase_settings("cold").items()}
    with load.gunicorn(env) as base:
        for _ in range(rounds):
            for target in measured:
                url = (base if target.kind == "baseline" else edge) + target.path
                for _ in range(3):  # the first request fills the edge
                    httpx.get(url, headers=BROWSER, timeout=10)
                runs[target.name].append(load.wrk(url, seconds, headers=BROWSER))
    baseline = statistics.median(run.rps for run in runs["baseline"])
    return [{
        "name": f"edge: {name}" if name != "baseline" else "baseline", "path": by_name[name].path,
        "rps": round(statistics.median(r.rps for r in found), 1),
        "p99_ms": round(statistics.median(r.p99_ms for r in found), 2),
        "ratio": round(statistics.median(r.rps for r in found) / baseline, 2),
        "errors": sum(r.errors for r in found),
        **({"bytes": page_bytes(edge + by_name[name].path)} if name != "baseline" else {}),
    } for name, found in runs.items()]


def api_token() -> str:
    from django.contrib.auth import get_user_model

    from accounts.models import ApiToken

    user, _ = get_user_model().objects.get_or_create(username="bench-edge", defaults={"is_staff": True, "is_superuser": True})
    return ApiToken.issue(user, f"bench edge {uuid.uuid4().hex[:6]}", [scope.value for scope in ApiToken.Scope])[1]


def publish_latency(edge: str, publishes: int) -> dict:
    """Seconds from the publish request's answer to the post's page answering 200 at the edge."""
    from blog.factories import PostFactory
    from publishing.workflow import Status

    auth = {"Authorization": f"Bearer {api_token()}"}
    latencies = []
    with httpx.Client(base_url=edge, timeout=10) as client:
        for _ in range(publishes):
            post = PostFactory(slug=f"edge-bench-{uuid.uuid4().hex[:10]}", status=Status.DRAFT, published_at=None)
            client.get(f"/posts/{post.slug}/")  # a 404 the edge may now keep
            answer = client.post(f"/api/v1/posts/{post.slug}/status", json={"status": "published"}, headers=auth)
            answer.raise_for_status()
            published = time.monotonic()
            while client.get(f"/posts/{post.slug}/").status_code != 200:
                if time.monotonic() - published > 30:
                    raise RuntimeError(f"{post.slug} not visible at the edge 30 s after publishing")
                time.sleep(0.01)
            latencies.append(time.monotonic() - published)
    latencies.sort()
    return {"publishes": publishes, "p50_s": round(statistics.median(latencies), 3),
            "p99_s": round(latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))], 3),
            "max_s": round(latencies[-1], 3)}


def edit_body(post) -> dict:
    """The post as its API detail shows it (a PUT replaces it whole): each edit then changes only the
    title, keeping the real byline and tags (a published post needs its byline)."""
    return {
        "title": post.title, "slug": post.slug, "body": post.body, "excerpt": post.excerpt,
        "disclosure": post.disclosure, "authors": [{"slug": author.slug} for author in post.ordered_authors()],
        "tags": sorted(tag.name for tag in post.tags.all()),
    }


def edit_summary(edits: list[dict]) -> dict:
    """Every edit's status in the order they started (0: no answer); a failed edit purged nothing."""
    edits = sorted(edits, key=lambda edit: edit["number"])
    failed = [edit for edit in edits if edit["status"] != 200]
    return {"edits": len(edits), "edit_statuses": [edit["status"] for edit in edits], "failed_edits": len(failed),
            "failed_examples": [f"edit {edit['number']}: {edit['status']} {edit['detail']}" for edit in failed[:3]]}


def hit_ratio_with_edits(edge: str, paths: list[str], seconds: float) -> dict:
    """X-Cache hits among reads of `paths` (two readers) while one post is edited every second."""
    from blog.factories import PostFactory

    token = api_token()
    edited = edit_body(PostFactory(slug=f"edge-edited-{uuid.uuid4().hex[:10]}"))
    hits, reads, edits = [], [], []
    stop = threading.Event()

    def reader():
        with httpx.Client(base_url=edge, timeout=10) as client:
            while not stop.is_set():
                for path in paths:
                    response = client.get(path)
                    reads.append(response.status_code)
                    hits.append(response.headers.get("X-Cache") == "HIT")

    def edit(number: int):
        status, detail = 0, ""
        try:
            with httpx.Client(base_url=edge, timeout=30, headers={"Authorization": f"Bearer {token}"}) as client:
                answer = client.put(f"/api/v1/posts/{edited['slug']}", json={**edited, "title": f"Edited {number}"})
            status, detail = answer.status_code, answer.text[:200]
        except httpx.HTTPError as error:
            detail = repr(error)
        edits.append({"number": number, "status": status, "detail": detail})

    def editor():
        """One edit started every second, however long the previous one takes on a loaded machine."""
        started = []
        for number in range(1_000_000):
            if stop.wait(1.0):
                break
            started.append(threading.Thread(target=edit, args=(number,)))
            started[-1].start()
        for thread in started:
            thread.join()

    threads = [threading.Thread(target=reader), threading.Thread(target=reader), threading.Thread(target=editor)]
    for thread in threads:
        thread.start()
    time.sleep(seconds)
    stop.set()
    for thread in threads:
        thread.join()
    return {"seconds": seconds, "reads": len(reads), **edit_summary(edits),
            "hit_ratio": round(sum(hits) / len(hits), 4) if hits else 0.0}


def failover(edge: str, env: dict, paths: list[str], seconds: float) -> dict:
    """Requests (half of them past the cache) while app1 is killed a third of the way in."""
    failures, done = [], []
    stop = threading.Event()

    def read(worker: int):
        with httpx.Client(base_url=edge, timeout=10) as client:
            for n in range(1_000_000):
                if stop.is_set():
                    return
                path = paths[n % len(paths)] + (f"?miss={worker}-{n}" if n % 2 else "")
                try:
                    status = client.get(path).status_code
                except httpx.HTTPError as error:
                    failures.append(repr(error))
                    continue
                done.append(status)
                if status >= 500:
                    failures.append(f"{path}: {status}")

    readers = [threading.Thread(target=read, args=(worker,)) for worker in range(4)]
    for thread in readers:
        thread.start()
    time.sleep(seconds / 3)
    supervisorctl = [str(Path(sys.executable).parent / "supervisorctl"), "-c", str(load.PROJECT_DIR / "deploy" / "supervisord.conf")]
    pid = subprocess.run([*supervisorctl, "pid", "app1"], env=env, capture_output=True, text=True).stdout.strip()
    os.killpg(int(pid), signal.SIGKILL)
    time.sleep(seconds * 2 / 3)
    stop.set()
    for thread in readers:
        thread.join()
    return {"seconds": seconds, "requests": len(done) + len(failures), "failed": len(failures),
            "examples": failures[:3]}


def measure(targets: list[Target], rounds: int, seconds: float, publishes: int, failover_seconds: float) -> dict:
    reason = missing()
    if reason:
        return {"skipped": reason}
    paths = [target.path for target in targets if target.name in EDGE_TARGETS]
    with topology() as env:
        edge = f"http://{env['EDGE_LISTEN']}"
        return {
            "targets": throughput(targets, edge, rounds, seconds),
            "publish_to_visible": publish_latency(edge, publishes),
            "hit_ratio_with_an_edit_per_second": hit_ratio_with_edits(edge, paths, max(seconds * 2, 5)),
            "failover": failover(edge, env, paths, failover_seconds),
        }
