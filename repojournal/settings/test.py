"""Tests: fast password hashing, a local-memory cache, and inline Celery unless a test asks for a worker."""
import uuid

from .base import *  # noqa: F403

SECRET_KEY = "test-only-insecure-key"
DEBUG = False
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}
ALLOWED_HOSTS = ["*"]
# A queue of this test run's own: a worker on the same Redis database (another checkout, `make worker`)
# never takes the suite's tasks, nor the suite its.
CELERY_TASK_DEFAULT_QUEUE = f"repojournal-test-{uuid.uuid4().hex[:12]}"
# pytest-httpserver listens on loopback; tests that prove egress refusals set this to [].
EGRESS_ALLOWED_NETWORKS = ["127.0.0.0/8", "::1/128"]
