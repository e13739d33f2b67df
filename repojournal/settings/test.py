"""Tests: fast password hashing, a local-memory cache, and inline Celery unless a test asks for a worker."""
import tempfile
import uuid
from pathlib import Path

from .base import *  # noqa: F403

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
