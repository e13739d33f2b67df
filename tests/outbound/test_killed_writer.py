"""A writer SIGKILLed between its commit and the announcement loses no ``*.updated`` (issue 39).

A real process retitles a reference cited by a published digest and is killed at the hook
point where its commit is done and the announcement not yet sent (the commit's callback). A real
Celery worker runs what beat runs; the subscriber, a real local HTTP server, gets the digest's
``digest.updated`` once. Before the announcement was a row written with the write, nothing ever
sent it.
"""
import os
import signal
import subprocess
import sys
import time
from datetime import timedelta
from pathlib import Path

import django.contrib.auth.middleware  # noqa: F401  imported while auth is installed (as test_worker.py)
import pytest
from celery.contrib.testing.worker import start_worker
from django.conf import settings
from django.db import connection
from django.utils import timezone

from digests.factories import DigestFactory, DigestReferenceFactory, ReferenceFactory
from digests.models import Reference
from outbound.models import Endpoint, Message
from repojournal.celery import app

ROOT = Path(__file__).resolve().parents[2]
#: A real worker announces (tests/outbound/conftest.py's in-process stand-in stays away).
REAL_WORKER = True

pytestmark = [
    pytest.mark.skipif(not os.environ.get("REDIS_URL"),
                       reason="a writer in another process and a real worker need PostgreSQL and Redis: set "
                              "DATABASE_URL and REDIS_URL (the PostgreSQL + Redis CI pass does); SQLite's test "
                              "database is in memory, out of another process's reach"),
    pytest.mark.django_db(transaction=True, available_apps=["digests", "blog", "outbound", "taggit", "reversion"]),
]

WRITE_THEN_DIE = """
import os, signal, sys
import django
django.setup()
from django.db import transaction
from digests.models import Reference
from outbound import events

def die(self):  # the hook point: the commit is done, its announcement not yet sent
    os.kill(os.getpid(), signal.SIGKILL)

events.Announcements.run = die
with transaction.atomic():
    reference = Reference.objects.get(pk=int(sys.argv[1]))
    reference.title = sys.argv[2]
    reference.save()
print("survived", flush=True)
"""


@pytest.fixture(autouse=True)
def skip_worker_system_checks(monkeypatch):
    monkeypatch.setenv("CELERY_SKIP_CHECKS", "1")


@pytest.fixture
def worker():
    assert not app.conf.task_always_eager
    app.control.purge()
    with start_worker(app, pool="solo", perform_ping_check=False, shutdown_timeout=30) as embedded:
        yield embedded
    app.control.purge()


def database_url() -> str:
    db = connection.settings_dict
    return f"postgres://{db['USER']}:{db['PASSWORD'] or ''}@{db['HOST']}:{db['PORT'] or 5432}/{db['NAME']}"


def days_ago(days: int):
    return timezone.now() - timedelta(days=days)


def run_beat_outbound_entries() -> None:
    """What beat sends: every outbound entry of the schedule, by its name, to the worker."""
    for entry in settings.CELERY_BEAT_SCHEDULE.values():
        if entry["task"].startswith("outbound."):
            app.send_task(entry["task"])


def wait_for(condition, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.1)
    pytest.fail(f"not within {timeout} s")


def test_a_writer_killed_after_its_commit_still_gets_the_update_to_the_subscriber_once(
        worker, receiver, settings, monkeypatch):
    if connection.vendor != "postgresql":
        pytest.skip("the writer in another process needs the test database on a server: run with DATABASE_URL")
    settings.OUTBOUND_ANNOUNCE_SWEEP_AFTER = 0  # the worker thread reads this process's settings
    reference = ReferenceFactory(title="Fix the allocator")
    digest = DigestReferenceFactory(reference=reference, digest=DigestFactory(published_at=days_ago(3))).digest
    endpoint = Endpoint.objects.create(url=receiver.url)
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "repojournal.settings.test", "DATABASE_URL": database_url()}
    writer = subprocess.run([sys.executable, "-c", WRITE_THEN_DIE, str(reference.pk), "Fix the caching allocator"],
                            cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert writer.returncode == -signal.SIGKILL, writer.stderr[-3000:]
    assert "survived" not in writer.stdout
    assert Reference.objects.get(pk=reference.pk).title == "Fix the caching allocator"  # committed
    time.sleep(1)
    assert not receiver.received and not Message.objects.exists()  # nothing sent it: the writer is dead

    run_beat_outbound_entries()
    wait_for(lambda: receiver.received, 20)
    run_beat_outbound_entries()  # and again: nothing twice
    time.sleep(3)
    [payload] = receiver.verified(endpoint.whsec)
    assert payload["type"] == "digest.updated" and payload["data"]["id"] == digest.pk
    assert "caching allocator" in str(payload["data"]["references"])
    assert list(Message.objects.values_list("type", flat=True)) == ["digest.updated"]
