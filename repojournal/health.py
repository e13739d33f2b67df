"""Health endpoints: what the edge routes by, what it serves stale by, and what operators watch.

- ``/health/live/`` -- liveness: the process answers. It asks no dependency, so a Redis
  or PostgreSQL outage never takes an instance out of the edge: while Redis is away an
  instance still stores webhook deliveries and renders pages (issue 25: probing every
  dependency turned a Redis restart into 503s from the edge for every uncached request).
  The edge's routing probe (deploy/varnish/default.vcl, ``probe live``).
- ``/health/ready/`` -- can the instance read its database, i.e. render pages? The edge
  does not route by it: while it fails the edge serves what it holds for as long as the
  page's ``stale-if-error`` allows, instead of 60 s (``probe database``).
- ``/health/`` -- every dependency (database, cache, broker, each read replica with its lag),
  for monitoring and ``make status``: 500 while any is down, or a replica is more than
  ``DATABASE_REPLICA_MAX_LAG`` behind (readers are then served by the primary meanwhile).

None is ever kept by a cache (``no-store``). Celery workers are not checked on purpose: a
stopped worker delays purges and processing, it must not take an instance out.
"""
import dataclasses

from django.conf import settings
from django.db import DatabaseError
from django.http import HttpResponse
from django.views.decorators.cache import never_cache
from health_check.base import HealthCheck
from health_check.exceptions import ServiceUnavailable
from health_check.views import HealthCheckView

from repojournal import replicas


@never_cache
def live(request) -> HttpResponse:
    """200 while the process answers; nothing else is asked."""
    return HttpResponse("live\n", content_type="text/plain")


def broker_client():
    """A fresh asyncio client for the broker (the check closes it after its ping)."""
    from redis.asyncio import Redis

    return Redis.from_url(settings.CELERY_BROKER_URL, socket_connect_timeout=2, socket_timeout=2)


@dataclasses.dataclass
class Replica(HealthCheck):
    """A read replica answers and is at most DATABASE_REPLICA_MAX_LAG seconds behind (measured now).

    ``lag_seconds`` is filled by the check, so the report names each replica with its lag.
    """

    alias: str = "replica_1"
    lag_seconds: float | None = None

    def run(self):
        try:
            self.lag_seconds = round(replicas.measure_lag(self.alias, replicas.health.positions), 3)
        except DatabaseError as error:
            raise ServiceUnavailable(f"unreachable: {str(error).splitlines()[0][:200]}") from error
        finally:  # the check runs on an executor's thread: its connections are its own
            replicas.close_quietly(self.alias)
            replicas.close_quietly(replicas.PRIMARY)
        if self.lag_seconds > settings.DATABASE_REPLICA_MAX_LAG:
            raise ServiceUnavailable(f"{self.lag_seconds} s behind the primary: readers are served by the primary")


def all_checks() -> list:
    found: list = ["health_check.checks.Database", "health_check.checks.Cache"]
    found += [(Replica, {"alias": alias}) for alias in settings.DATABASE_REPLICAS]
    if settings.CELERY_BROKER_URL.startswith(("redis://", "rediss://")):
        found.append(("health_check.contrib.redis.Redis", {"client_factory": broker_client}))
    return found


def everything_view():
    """/health/: every dependency this deployment has."""
    return HealthCheckView.as_view(checks=all_checks())


def ready_view():
    """/health/ready/: the database only (``SELECT 1``), what rendering a page needs."""
    return HealthCheckView.as_view(checks=["health_check.checks.Database"])
