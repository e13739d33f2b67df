"""While the database is away (repojournal/outages.py): 503 with Retry-After, never a 500, and nothing cached."""
import json

import pytest
from django.db import OperationalError
from django.db.backends.base.base import BaseDatabaseWrapper


@pytest.fixture
def database_away(django_db_blocker, monkeypatch, settings):
    """Every new query fails to connect, as when PostgreSQL restarts (Django wraps the driver's error so)."""
    settings.PAGE_CACHE_ENABLED = False  # a page cached before the outage would be served: not what is tested

    def refuse(self):
        raise OperationalError('connection to server at "127.0.0.1", port 5432 failed: Connection refused')

    with django_db_blocker.unblock():
        monkeypatch.setattr(BaseDatabaseWrapper, "ensure_connection", refuse)
        yield


@pytest.mark.parametrize("path", ["/", "/posts/", "/wire/", "/search/?q=allocator", "/sitemap.xml"])
def test_a_page_while_the_database_is_away_is_a_503_to_retry(client, database_away, path):
    response = client.get(path)
    assert response.status_code == 503
    assert response["Retry-After"] == "30"
    assert "no-store" in response["Cache-Control"]
    assert "Back in a moment" in response.content.decode()


def test_an_api_write_while_the_database_is_away_is_a_503_in_the_api_s_shape(client, database_away):
    response = client.post("/api/v1/posts/", json.dumps({"title": "x"}), content_type="application/json",
                           HTTP_AUTHORIZATION="Bearer rj_whatever")
    assert response.status_code == 503 and response["Retry-After"] == "30"
    assert response.json() == {"detail": "The database is unavailable; retry shortly.", "errors": []}
    assert "no-store" in response["Cache-Control"]


def test_a_sign_in_while_the_database_is_away_is_a_503(client, database_away):
    response = client.post("/admin/login/", {"username": "editor", "password": "pw"})
    assert response.status_code == 503 and response["Retry-After"] == "30"


@pytest.mark.django_db
def test_an_editor_in_the_admin_while_the_database_is_away_gets_a_503(admin_client, database_away):
    response = admin_client.get("/admin/blog/post/")
    assert response.status_code == 503 and response["Retry-After"] == "30"


# --- Redis away: the cache and the broker. Readers, API clients and editors are served from the database. ---

@pytest.fixture
def redis_away(settings):
    """The site's Redis cache and broker on a port where nothing listens: every command is refused."""
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    settings.CACHES = {"default": {"BACKEND": "reader.cache_backend.RedisCache",
                                   "LOCATION": f"redis://127.0.0.1:{port}/0"}}
    settings.CELERY_BROKER_URL = f"redis://127.0.0.1:{port}/0"


@pytest.mark.django_db
def test_while_redis_is_away_pages_the_api_and_the_admin_answer_from_the_database(client, admin_client, admin_user,
                                                                                  redis_away):
    from accounts.models import ApiToken
    from blog.factories import PostFactory

    post = PostFactory(title="Served without Redis")
    for path in ("/", f"/posts/{post.slug}/", "/api/v1/posts/", f"/api/v1/posts/{post.slug}"):
        response = client.get(path)
        assert response.status_code == 200, path
        assert "Served without Redis" in response.content.decode(), path
    raw = ApiToken.issue(admin_user, "reader", [])[1]
    assert client.get("/api/v1/posts/", HTTP_AUTHORIZATION=f"Bearer {raw}").status_code == 200
    assert client.get("/api/v1/posts/", HTTP_AUTHORIZATION="Bearer rj_unknown").status_code == 401
    assert admin_client.get("/admin/blog/post/").status_code == 200


def test_a_read_that_meets_a_lock_is_a_503_to_retry_not_a_409_about_saving(client, monkeypatch, settings):
    """A lock conflict on a GET (SQLite's writer busy under `make run`) saved nothing: retry, as for an outage."""
    import sqlite3

    settings.PAGE_CACHE_ENABLED = False
    busy = sqlite3.OperationalError("database is locked")
    busy.sqlite_errorcode = sqlite3.SQLITE_BUSY

    def locked(self):
        raise OperationalError("database is locked") from busy

    with monkeypatch.context() as patched:
        patched.setattr(BaseDatabaseWrapper, "ensure_connection", locked)
        response = client.get("/posts/")
    assert response.status_code == 503 and response["Retry-After"] == "30"
