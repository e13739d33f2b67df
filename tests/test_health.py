"""/health/ (repojournal/urls.py): what the edge probes must say healthy or not, and never be cached."""
import pytest
from asgiref.sync import async_to_sync
from django.test import RequestFactory
from django.test import override_settings

from repojournal import urls as health


@pytest.mark.django_db
def test_health_answers_200_and_is_never_cached(client):
    response = client.get("/health/?format=text")
    assert response.status_code == 200
    assert "Database" in response.content.decode() and "Cache" in response.content.decode()
    assert "no-store" in response["Cache-Control"] and "private" in response["Cache-Control"]


@pytest.mark.django_db
def test_health_answers_500_when_the_broker_is_unreachable():
    # A port nothing listens on: the Redis check must fail and say so (so the edge drops this instance).
    request = RequestFactory().get("/health/?format=text")
    with override_settings(CELERY_BROKER_URL="redis://127.0.0.1:1/0"):
        response = async_to_sync(health.health_view())(request)
    assert response.status_code == 500


def test_broker_is_checked_only_when_it_is_redis():
    with override_settings(CELERY_BROKER_URL="memory://"):
        assert not any(isinstance(check, tuple) for check in health.health_checks())
    with override_settings(CELERY_BROKER_URL="redis://127.0.0.1:6379/4"):
        assert any(isinstance(check, tuple) for check in health.health_checks())
