"""The health endpoint the edge probes (deploy/varnish/default.vcl) and operators read.

django-health-check answers 200 while the database, the cache and the Celery broker answer,
500 otherwise, and never lets a cache keep the answer: Varnish stops sending readers to an
instance whose probe fails. Celery workers are not checked here on purpose: a stopped
worker delays purges but must not take every app instance out of the edge.
"""
from django.conf import settings
from health_check.views import HealthCheckView


def broker_client():
    """A fresh asyncio client for the broker (the check closes it after its ping)."""
    from redis.asyncio import Redis

    return Redis.from_url(settings.CELERY_BROKER_URL, socket_connect_timeout=2, socket_timeout=2)


def checks() -> list:
    found: list = ["health_check.checks.Database", "health_check.checks.Cache"]
    if settings.CELERY_BROKER_URL.startswith(("redis://", "rediss://")):
        found.append(("health_check.contrib.redis.Redis", {"client_factory": broker_client}))
    return found


def view():
    """The health view with this deployment's checks (urls.py mounts it at /health/)."""
    return HealthCheckView.as_view(checks=checks())
