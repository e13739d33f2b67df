"""Tests: fast password hashing, a local-memory cache, and inline Celery unless a test asks for a worker."""
import os
import tempfile
import uuid
from pathlib import Path


def _worker_redis_url(url: str, worker: str) -> str:
    """Each pytest-xdist worker (PYTEST_XDIST_WORKER=gw0, gw1, ...) on a Redis database of its own, two apart
    (the bench takes the database after the suite's: tests/perf/test_bench.py): a test that clears its
    cache, or a topology's workers draining a queue, never reach into another worker's tests."""
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    number = int(parts.path.strip("/") or 0) + 2 * int(worker.removeprefix("gw"))
    return parts._replace(path=f"/{number % 16}").geturl()


_WORKER = os.environ.get("PYTEST_XDIST_WORKER", "")
if os.environ.get("REDIS_URL") and _WORKER and os.environ.get("REPOJOURNAL_REDIS_WORKER") != _WORKER:
    # Before base reads it, and in os.environ so the processes a test starts inherit it (marked done, so
    # one of them loading these settings again does not move it a second time).
    os.environ["REDIS_URL"] = _worker_redis_url(os.environ["REDIS_URL"], _WORKER)
    os.environ["REPOJOURNAL_REDIS_WORKER"] = _WORKER

from .base import *  # noqa: E402, F403

SECRET_KEY = "test-only-insecure-key"
DEBUG = False
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}
ALLOWED_HOSTS = ["*"]
# A queue of this test run's own: a worker on the same Redis database (another checkout, `make worker`)
# never takes the suite's tasks, nor the suite its.
CELERY_TASK_DEFAULT_QUEUE = f"repojournal-test-{uuid.uuid4().hex[:12]}"
# No worker reads this run's queue: writes record purges only where a test configures an edge
# (EDGE_PURGE_BACKEND), on SQLite and on PostgreSQL + Redis alike. tests/edge runs the real rule.
EDGE_RECORD_PURGES = False
# pytest-httpserver listens on loopback; tests that prove egress refusals set this to [].
EGRESS_ALLOWED_NETWORKS = ["127.0.0.0/8", "::1/128"]
# The suite never asks a model it was not given: tests that want one start a local server (issue 36).
DRAFTING_MODEL_URL = ""

# Outbound webhooks (issue 18): the tests' receivers are plain-http servers on loopback.
OUTBOUND_REQUIRE_HTTPS = False

# Images (issue 26): files of this run go to a temporary folder, never the checkout's media/ and var/
# (tests/images points each test at its own).
_IMAGES_DIR = Path(tempfile.gettempdir()) / f"repojournal-test-images-{uuid.uuid4().hex[:12]}"
MEDIA_ROOT = _IMAGES_DIR / "renditions"
IMAGES_ORIGINALS_ROOT = _IMAGES_DIR / "originals"
STORAGES = {
    **STORAGES,  # noqa: F405
    "images": {"BACKEND": "django.core.files.storage.FileSystemStorage",
               "OPTIONS": {"location": MEDIA_ROOT, "base_url": MEDIA_URL}},  # noqa: F405
    "image_originals": {"BACKEND": "django.core.files.storage.FileSystemStorage",
                        "OPTIONS": {"location": IMAGES_ORIGINALS_ROOT}},
}
