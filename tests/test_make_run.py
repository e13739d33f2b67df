"""`make run` for real: the server and its scheduler (manage.py run_schedule) on one SQLite file.

Issue 39: under `make run` (no REDIS_URL, tasks inline) nothing ran beat's schedule, so an outbound
endpoint that answered 500 got its first attempt and never another. Here `make run`'s own recipe
starts both processes (its `demo` prerequisite -- migrate and import the demo content -- is done by
the test instead: `make -o demo`, and migrate only), a post is published through the server's API,
the receiver answers 500, and the scheduler retries it on schedule, to a 200.

The retry is also where the two processes meet on SQLite: the scheduler's delivery transaction is
open while the receiver takes its time answering, and the server takes a write meanwhile. Both must
succeed, once each -- not "database is locked" in either (settings/dev.py: WAL, IMMEDIATE
transactions, a busy timeout). Ctrl-C then stops both processes.
"""
import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import pytest
from werkzeug import Response

from tests.edge.conftest import free_port, wait_for

PROJECT_DIR = Path(__file__).resolve().parent.parent
#: How long the receiver holds the scheduler's retry before answering: the server's write comes meanwhile.
HOLD_SECONDS = 3.0

SETUP = """
import django, sys
django.setup()
from django.core.management import call_command
call_command("migrate", verbosity=0)
from django.contrib.auth import get_user_model
from accounts.models import ApiToken
from outbound.models import Endpoint

Endpoint.objects.create(url=sys.argv[1], event_types=["post.published"])
user = get_user_model().objects.create_superuser("publisher", password="pw")
print(ApiToken.issue(user, "make-run", [scope.value for scope in ApiToken.Scope])[1])
"""


class Receiver:
    """Answers 500 to the first delivery; holds the second HOLD_SECONDS (telling the test), then 200."""

    def __init__(self, httpserver):
        self.requests, self.retry_arrived = [], threading.Event()
        httpserver.expect_request("/hook", method="POST").respond_with_handler(self.handle)
        self.url = httpserver.url_for("/hook")

    def handle(self, request):
        self.requests.append((time.monotonic(), request.get_json()))
        if len(self.requests) == 1:
            return Response("down for a moment", status=500)
        self.retry_arrived.set()
        time.sleep(HOLD_SECONDS)
        return Response("", status=204)


def run_env(tmp_path: Path, database: Path) -> dict[str, str]:
    env = {name: value for name, value in os.environ.items()
           if name not in ("REDIS_URL", "DJANGO_SETTINGS_MODULE", "DATABASE_URL", "MAKEFLAGS", "MFLAGS")}
    return {**env, "DATABASE_URL": f"sqlite:///{database}", "EGRESS_ALLOWED_NETWORKS": "127.0.0.0/8",
            "OUTBOUND_SWEEP_SECONDS": "1", "PORT": str(free_port()), "DJANGO_MEDIA_ROOT": str(tmp_path / "media"),
            "IMAGES_ORIGINALS_ROOT": str(tmp_path / "originals")}


def session_processes(session_id: int) -> list[int]:
    """The processes still in `make run`'s session (make, its shell, the server, the scheduler)."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and os.getsid(int(entry.name)) == session_id:
                found.append(int(entry.name))
        except ProcessLookupError:
            continue
    return found


@pytest.fixture
def make_run(tmp_path, httpserver):
    """`make run`'s processes on a fresh SQLite file; yields (server URL, API token, receiver, log), then Ctrl-C."""
    receiver = Receiver(httpserver)
    database = tmp_path / "run.sqlite3"
    env = run_env(tmp_path, database)
    setup = subprocess.run([sys.executable, "-c", SETUP, receiver.url], cwd=PROJECT_DIR,
                           env={**env, "DJANGO_SETTINGS_MODULE": "repojournal.settings.dev"},
                           capture_output=True, text=True, timeout=300)
    assert setup.returncode == 0, setup.stderr[-3000:]
    token = setup.stdout.strip().splitlines()[-1]
    log = tmp_path / "make-run.log"
    with log.open("wb") as output:
        # -o demo: the recipe of `run` as it is, without remaking its prerequisites (done above).
        make = subprocess.Popen(["make", "--no-print-directory", "-o", "demo", "run"], cwd=PROJECT_DIR, env=env,
                                stdout=output, stderr=subprocess.STDOUT, start_new_session=True)
    url = f"http://127.0.0.1:{env['PORT']}"
    try:
        ready = wait_for(lambda: b"Running beat's schedule inline" in log.read_bytes() and answers(url), 90, 0.2)
        assert ready, log.read_text()[-3000:]
        yield url, token, receiver, log, database
        os.killpg(make.pid, signal.SIGINT)  # Ctrl-C in the terminal: the whole foreground group
        make.wait(30)
        assert wait_for(lambda: not session_processes(make.pid), 30), "a process of `make run` outlived it"
    finally:
        if make.poll() is None or session_processes(make.pid):
            os.killpg(make.pid, signal.SIGKILL)


def answers(url: str) -> bool:
    try:
        return httpx.get(f"{url}/health/live/", timeout=2).status_code == 200
    except httpx.HTTPError:
        return False


def test_make_run_retries_a_failed_delivery_on_schedule_while_the_site_takes_writes(make_run):
    url, token, receiver, log, database = make_run
    api = httpx.Client(base_url=f"{url}/api/v1", headers={"Authorization": f"Bearer {token}"}, timeout=60)
    assert api.post("/authors/", json={"slug": "ada", "name": "Ada"}).status_code == 201
    created = api.post("/posts/", json={"title": "Retried", "slug": "retried", "body": "Hello.",
                                        "authors": [{"slug": "ada"}]})
    assert created.status_code == 201, created.text
    published = api.post("/posts/retried/status", json={"status": "published"})
    assert published.status_code == 200, published.text
    assert len(receiver.requests) == 1  # the first attempt, inline in the server: 500
    first_at = receiver.requests[0][0]

    # The scheduler's sweep (every OUTBOUND_SWEEP_SECONDS) retries once the delivery is due (5 s after).
    assert receiver.retry_arrived.wait(30), log.read_text()[-3000:]
    retried_after = receiver.requests[1][0] - first_at
    # While the receiver holds the retry, its transaction is open in the scheduler: the server writes.
    draft = api.post("/posts/", json={"title": "Written meanwhile", "slug": "meanwhile", "body": "Draft.",
                                      "authors": [{"slug": "ada"}]})
    assert draft.status_code == 201, draft.text

    def delivered():
        with sqlite3.connect(database) as db:
            return db.execute("SELECT state, attempt_count FROM outbound_delivery").fetchall() == [("succeeded", 2)]

    assert wait_for(delivered, 30), log.read_text()[-3000:]
    time.sleep(2)  # two more sweeps: nothing is sent again
    assert [payload["data"]["title"] for _, payload in receiver.requests] == ["Retried", "Retried"]
    assert retried_after >= 5  # not before the first retry's delay; wait(30) above bounds it on a loaded machine
    text = log.read_text()
    assert "database is locked" not in text and "Traceback" not in text, text[-3000:]
    assert "edge.tasks.sweep_scheduled" not in text  # every 2 s: not a line each time in the terminal
