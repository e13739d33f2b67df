"""Tests: fast password hashing, a local-memory cache, and inline Celery unless a test asks for a worker."""
from .base import *  # noqa: F403

SECRET_KEY = "test-only-insecure-key"
DEBUG = False
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}
ALLOWED_HOSTS = ["*"]
