"""Benchmarks (bench/): production-like serving plus the minimal baseline view.

DEBUG off, persistent database connections and the Redis cache when REDIS_URL
is set, so the numbers describe the stack as deployed. Two things differ from
production and only here: ``/bench/baseline/`` (the minimal view every figure
is a ratio to) and API throttles high enough never to answer 429 under load --
the throttle still runs, so its cost is measured.
"""
import os

from .base import *  # noqa: F403
from .base import DATABASES, env_bool

DEBUG = False
SECRET_KEY = os.environ.get("DJANGO_SECRET_KEY") or "bench-only-secret-key-0123456789-abcdefghij-klmnop"
ALLOWED_HOSTS = ["127.0.0.1", "localhost", "testserver"]
ROOT_URLCONF = "bench.urls"
for _alias in DATABASES:  # the primary and any replica (DATABASE_REPLICA_URLS)
    DATABASES[_alias]["CONN_MAX_AGE"] = int(os.environ.get("DATABASE_CONN_MAX_AGE", "600"))

GITHUB_WEBHOOK_SECRET = os.environ.get("GITHUB_WEBHOOK_SECRET") or "bench-webhook-secret"
API_THROTTLE_RATES = {scope: "1000000/s" for scope in ("list_ip", "list_token", "write_ip", "write_token")}

# The cold-cache phase turns the page cache off; the warm phase leaves it on.
PAGE_CACHE_ENABLED = env_bool("PAGE_CACHE_ENABLED", True)

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": os.environ.get("LOG_LEVEL", "WARNING")},
}
