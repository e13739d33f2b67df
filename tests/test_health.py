"""Health endpoints (repojournal/health.py): what the edge routes by, what it serves stale by, what operators read."""
import pytest
from asgiref.sync import async_to_sync
from django.db import connections
from django.test import RequestFactory, override_settings

from repojournal import health


@pytest.mark.django_db
def test_health_answers_200_and_is_never_cached(client):
    response = client.get("/health/?format=text")
    assert response.status_code == 200
    assert "Database" in response.content.decode() and "Cache" in response.content.decode()
    assert "no-store" in response["Cache-Control"] and "private" in response["Cache-Control"]


@pytest.mark.django_db
def test_health_answers_500_when_the_broker_is_unreachable():
    # A port nothing listens on: the Redis check must fail and say so (monitoring sees the outage).
    request = RequestFactory().get("/health/?format=text")
    with override_settings(CELERY_BROKER_URL="redis://127.0.0.1:1/0"):
        response = async_to_sync(health.everything_view())(request)
    assert response.status_code == 500


def test_broker_is_checked_only_when_it_is_redis():
    with override_settings(CELERY_BROKER_URL="memory://"):
        assert not any(isinstance(check, tuple) for check in health.all_checks())
    with override_settings(CELERY_BROKER_URL="redis://127.0.0.1:6379/4"):
        assert any(isinstance(check, tuple) for check in health.all_checks())


def test_liveness_asks_no_dependency(client):
    """The edge routes by it: with the broker and the cache unreachable it still answers, and it never
    touches the database (no ``django_db`` mark: a query here would raise)."""
    unreachable = {"default": {"BACKEND": "django.core.cache.backends.redis.RedisCache",
                               "LOCATION": "redis://127.0.0.1:1/0"}}
    with override_settings(CELERY_BROKER_URL="redis://127.0.0.1:1/0", CACHES=unreachable):
        response = client.get("/health/live/")
    assert response.status_code == 200 and response.content == b"live\n"
    assert "no-store" in response["Cache-Control"]


@pytest.mark.django_db
def test_readiness_is_the_database_and_only_the_database(client):
    with override_settings(CELERY_BROKER_URL="redis://127.0.0.1:1/0"):
        ready = client.get("/health/ready/?format=text")
    assert ready.status_code == 200 and "Database" in ready.content.decode()
    assert "Cache" not in ready.content.decode() and "Redis" not in ready.content.decode()
    assert "no-store" in ready["Cache-Control"]


@pytest.mark.django_db
def test_readiness_fails_while_the_database_is_away(monkeypatch):
    def refuse(*args, **kwargs):
        from django.db import OperationalError

        raise OperationalError("connection refused")

    # The check runs in another thread, on its own connection object: refuse on the class.
    monkeypatch.setattr(type(connections["default"]), "temporary_connection", refuse)
    response = async_to_sync(health.ready_view())(RequestFactory().get("/health/ready/?format=text"))
    assert response.status_code == 500
