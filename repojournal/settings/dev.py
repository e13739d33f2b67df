"""Local development: DEBUG on by default and a throwaway secret key."""
import os

from .base import *  # noqa: F403
from .base import BASE_DIR, DATABASES, REDIS_URL, env_bool

DEBUG = env_bool("DJANGO_DEBUG", True)
SECRET_KEY = SECRET_KEY or "dev-only-insecure-key-never-use-in-production"  # noqa: F405
# Outbound webhooks: a local receiver over plain http is fine while developing.
OUTBOUND_REQUIRE_HTTPS = env_bool("OUTBOUND_REQUIRE_HTTPS", False)

# `make run` writes to its SQLite file from two processes, the server and its scheduler (manage.py
# run_schedule). WAL: pages are read while the other process writes. IMMEDIATE: a transaction takes the
# write lock when it begins, so the other waits for it (up to SQLITE_BUSY_TIMEOUT seconds: more than the
# 15 s an outbound delivery is tried inside its transaction) instead of failing at once with "database is
# locked" when a transaction that read first goes on to write.
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    DATABASES["default"].setdefault("OPTIONS", {}).update(
        init_command="PRAGMA journal_mode=WAL", transaction_mode="IMMEDIATE",
        timeout=float(os.environ.get("SQLITE_BUSY_TIMEOUT", "20")),
    )

# Without Redis, the cache (pages, rate limits, locks) is a folder both processes share, not each one's
# memory: a page the scheduler changes (a card drawn, a sweep's re-render) is seen by the server at once,
# as under `make up`. The folder goes with the database (beside its SQLite file: another database, a
# test's say, never reads this one's pages), and `make clean` removes both.
if not REDIS_URL:
    _database = DATABASES["default"]
    _cache_dir = (f"{_database['NAME']}-cache" if _database["ENGINE"] == "django.db.backends.sqlite3"
                  else str(BASE_DIR / "var" / "cache" / str(_database["NAME"])))
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.filebased.FileBasedCache", "LOCATION": _cache_dir}}
