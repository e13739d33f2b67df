"""Which reads may go to a replica, in one process (the real primary and replica: test_replicas.py)."""
import json
import os
import secrets
import subprocess
import sys

import pytest
from django.core.cache import cache
from django.db import OperationalError, connections
from django.http import HttpResponse
from django.test import RequestFactory

from reader import caching
from repojournal import replicas
from tests.faults.stack import ROOT

factory = RequestFactory()


def settings_with(**environment) -> dict:
    """The settings a process started with `environment` has (DATABASES, routers, middleware)."""
    code = ("import json, django; django.setup(); from django.conf import settings as s; print(json.dumps("
            "{'databases': s.DATABASES, 'routers': s.DATABASE_ROUTERS, 'middleware': s.MIDDLEWARE,"
            " 'replicas': s.DATABASE_REPLICAS, 'max_lag': s.DATABASE_REPLICA_MAX_LAG}, default=str))")
    env = {name: value for name, value in os.environ.items() if name != "DATABASE_REPLICA_URLS"}
    env.update(DJANGO_SETTINGS_MODULE="repojournal.settings.prod", DJANGO_SECRET_KEY=secrets.token_urlsafe(50),
               DATABASE_URL="postgres://app@db.internal:5432/site", **environment)
    result = subprocess.run([sys.executable, "-c", code], env=env, cwd=ROOT, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.splitlines()[-1])


def test_without_replicas_there_is_one_database_and_no_router():
    found = settings_with()
    assert list(found["databases"]) == ["default"]
    assert found["routers"] == [] and found["replicas"] == []
    assert "repojournal.replicas.ReplicaRoutingMiddleware" not in found["middleware"]


def test_each_replica_url_is_an_alias_read_by_the_router():
    found = settings_with(DATABASE_REPLICA_URLS="postgres://app@replica-a:5432/site, postgres://app@replica-b:6432/site",
                          DATABASE_REPLICA_MAX_LAG="2.5")
    assert found["replicas"] == ["replica_1", "replica_2"]
    assert found["databases"]["replica_2"]["HOST"] == "replica-b" and found["databases"]["replica_2"]["PORT"] == 6432
    assert found["databases"]["replica_1"]["OPTIONS"]["connect_timeout"] == 2
    assert found["databases"]["replica_1"]["TEST"]["MIRROR"] == "default"
    assert found["routers"] == ["repojournal.replicas.ReplicaRouter"] and found["max_lag"] == 2.5
    middleware = found["middleware"]
    # Just inside the outage middleware: its process_exception runs first, and it wraps the page cache.
    assert middleware.index("repojournal.replicas.ReplicaRoutingMiddleware") == \
        middleware.index("repojournal.outages.DatabaseOutageMiddleware") + 1


@pytest.mark.parametrize(("method", "path", "headers", "cookies", "expected"), [
    ("GET", "/posts/", {}, {}, True),
    ("HEAD", "/wire/", {}, {}, True),
    ("GET", "/api/v1/digests/", {"HTTP_AUTHORIZATION": "Bearer rj_reader"}, {}, True),
    ("GET", "/posts/", {}, {"sessionid": "x"}, False),  # editors: admin, previews, the edit bar
    ("GET", "/admin/digests/digest/", {}, {}, False),
    ("GET", "/health/", {}, {}, False),
    ("POST", "/api/v1/digests/", {}, {}, False),
    ("GET", "/posts/", {}, {replicas.PIN_COOKIE: "1"}, False),  # this browser wrote a moment ago
])
def test_which_requests_may_read_a_replica(method, path, headers, cookies, expected):
    request = factory.generic(method, path, **headers)
    request.COOKIES.update(cookies)
    assert replicas.may_lag(request) is expected


def test_an_api_client_that_wrote_reads_the_primary_until_replicas_have_its_write(settings):
    settings.DATABASE_REPLICA_MAX_LAG = 5
    cache.clear()
    read = factory.get("/api/v1/digests/x", HTTP_AUTHORIZATION="Bearer rj_writer")
    other = factory.get("/api/v1/digests/x", HTTP_AUTHORIZATION="Bearer rj_someone_else")
    assert replicas.may_lag(read)
    write = factory.put("/api/v1/digests/x", HTTP_AUTHORIZATION="Bearer rj_writer")
    response = HttpResponse()
    replicas.remember_write(write, response)
    assert not replicas.may_lag(read) and replicas.may_lag(other)
    assert replicas.PIN_COOKIE not in response.cookies  # API clients are pinned by token, not by cookie
    assert settings.DATABASE_REPLICA_PIN_SECONDS > settings.DATABASE_REPLICA_MAX_LAG


def test_a_browser_that_wrote_gets_a_short_lived_pin_cookie(settings):
    response = HttpResponse()
    replicas.remember_write(factory.post("/accounts/sign-in/"), response)
    cookie = response.cookies[replicas.PIN_COOKIE]
    assert cookie["httponly"] and cookie["max-age"] == int(settings.DATABASE_REPLICA_PIN_SECONDS) + 1


def test_after_a_public_change_every_reader_reads_the_primary_for_a_while(settings):
    """The edge refetches a purged page at once and keeps it: no replica may render it before it has the change."""
    settings.DATABASE_REPLICAS = ["replica_1"]
    cache.clear()
    anonymous = factory.get("/posts/")
    assert replicas.may_lag(anonymous)
    caching.forget_version()  # what a public save does, now and on commit
    assert not replicas.may_lag(anonymous)
    cache.delete(caching.CONTENT_CHANGED_KEY)  # what its expiry does
    assert replicas.may_lag(anonymous)


def test_without_replicas_a_public_change_pins_nothing(settings):
    settings.DATABASE_REPLICAS = []
    cache.clear()
    caching.forget_version()
    assert cache.get(caching.CONTENT_CHANGED_KEY) is None


def test_with_the_shared_cache_away_a_token_client_reads_the_primary(monkeypatch):
    def unavailable(*args, **kwargs):
        raise ConnectionError("redis is restarting")

    monkeypatch.setattr(cache, "get_many", unavailable)
    assert not replicas.may_lag(factory.get("/api/v1/digests/", HTTP_AUTHORIZATION="Bearer rj_reader"))


class Health(replicas.ReplicaHealth):
    """Lags told by the test instead of measured."""

    def __init__(self, lags):
        super().__init__()
        self.lags = lags

    def check(self, alias, now=None):
        self.checked_at[alias] = now if now is not None else 0.0
        self.lag[alias] = self.lags[alias]
        return self.lag[alias]


@pytest.fixture
def two_replicas(settings, monkeypatch):
    settings.DATABASE_REPLICAS = ["replica_1", "replica_2"]
    settings.DATABASE_REPLICA_MAX_LAG = 5
    state = Health({"replica_1": 0.0, "replica_2": 9.0})
    monkeypatch.setattr(replicas, "health", state)
    monkeypatch.setattr(replicas, "close_quietly", lambda alias: None)  # these aliases have no server
    return state


def test_the_router_reads_a_current_replica_only_for_a_request_that_may_lag(two_replicas):
    router = replicas.ReplicaRouter()
    assert router.db_for_read(None) == "default"  # a worker, a command: no request
    route = replicas.Route()
    token = replicas._route.set(route)
    try:
        assert router.db_for_read(None) == "replica_1"  # replica_2 is 9 s behind
        assert route.replica == "replica_1"
        two_replicas.lags["replica_1"] = 20.0
        two_replicas.checked_at.clear()
        assert router.db_for_read(None) == "replica_1"  # chosen once per request: one snapshot
        connections["default"].in_atomic_block = True  # inside transaction.atomic()
        try:
            assert router.db_for_read(None) == "default"
        finally:
            connections["default"].in_atomic_block = False
    finally:
        replicas._route.reset(token)
    for lag, may_lag in ((None, True), (0.0, False)):  # down; a request that may not lag
        two_replicas.lags["replica_1"] = lag
        two_replicas.checked_at.clear()
        token = replicas._route.set(replicas.Route(may_lag=may_lag))
        try:
            assert router.db_for_read(None) == "default"
        finally:
            replicas._route.reset(token)
    assert router.db_for_write(None) == "default"
    assert router.allow_migrate("default", "blog") and not router.allow_migrate("replica_1", "blog")


def test_a_replica_failing_mid_request_is_answered_again_from_the_primary(two_replicas):
    calls = []

    def view(request):
        route = replicas._route.get()
        calls.append(route.may_lag)
        if route.may_lag:
            route.alias = "replica_1"
            return middleware.process_exception(request, OperationalError("terminating connection"))
        return HttpResponse("from the primary")

    middleware = replicas.ReplicaRoutingMiddleware(view)
    response = middleware(factory.get("/posts/"))
    assert response.status_code == 200 and response.content == b"from the primary"
    assert calls == [True, False]
    assert two_replicas.lag["replica_1"] is None  # left out until a check finds it back
    assert replicas._route.get() is None


def test_an_error_on_the_primary_is_left_to_the_outage_middleware(two_replicas):
    middleware = replicas.ReplicaRoutingMiddleware(lambda request: HttpResponse())
    request = factory.get("/posts/")
    token = replicas._route.set(replicas.Route(may_lag=False, alias="default"))  # the retry, on the primary
    try:
        assert middleware.process_exception(request, OperationalError("gone")) is None
    finally:
        replicas._route.reset(token)
    assert middleware.process_exception(request, ValueError("a bug")) is None  # no route: not ours


def test_a_replica_is_as_far_behind_as_the_last_primary_position_it_holds():
    assert replicas.lsn("16/B374D848") == (0x16 << 32) + 0xB374D848
    positions = replicas.PrimaryPositions()
    positions.record(100, 10.0)
    positions.record(200, 11.0)
    positions.record(300, 12.0)
    assert positions.reached(250) == 11.0
    assert positions.reached(99) is None
