"""Conditional GET on published objects, Cache-Control, and 429 with Retry-After."""
import pytest
from django.test import override_settings

from blog.factories import PostFactory
from digests.factories import DigestFactory, DigestReferenceFactory
from publishing.workflow import Status

from .conftest import bearer

pytestmark = pytest.mark.django_db


@pytest.fixture
def published_urls():
    digest = DigestFactory()
    citation = DigestReferenceFactory(digest=digest)
    post = PostFactory()
    return {
        "digest": f"/api/v1/digests/{digest.slug}",
        "post": f"/api/v1/posts/{post.slug}",
        "reference": f"/api/v1/references/{citation.reference_id}",
    }


@pytest.mark.parametrize("kind", ["digest", "post", "reference"])
def test_published_objects_carry_validators_and_answer_304(client, published_urls, kind):
    url = published_urls[kind]
    first = client.get(url)
    assert first.status_code == 200
    assert first["ETag"].startswith('"') and first["Last-Modified"].endswith("GMT")
    assert first["Cache-Control"].startswith("public, max-age=60, s-maxage=") and "Authorization" in first["Vary"]

    by_etag = client.get(url, HTTP_IF_NONE_MATCH=first["ETag"])
    assert by_etag.status_code == 304 and by_etag.content == b"" and by_etag["ETag"] == first["ETag"]
    by_date = client.get(url, HTTP_IF_MODIFIED_SINCE=first["Last-Modified"])
    assert by_date.status_code == 304
    assert client.get(url, HTTP_IF_NONE_MATCH='"something-else"').status_code == 200


def test_a_change_changes_the_etag(client):
    digest = DigestFactory()
    url = f"/api/v1/digests/{digest.slug}"
    etag = client.get(url)["ETag"]
    citation = DigestReferenceFactory(digest=digest)
    citation.reference.title = "Retitled"
    citation.reference.save()
    after = client.get(url, HTTP_IF_NONE_MATCH=etag)
    assert after.status_code == 200 and after["ETag"] != etag


def test_drafts_seen_with_a_token_are_private(client, editor, make_token):
    draft = DigestFactory(status=Status.DRAFT)
    response = client.get(f"/api/v1/digests/{draft.slug}", **bearer(make_token(editor, "read:drafts")))
    assert response.status_code == 200 and response["Cache-Control"] == "private, no-cache"
    listing = client.get("/api/v1/digests/", **bearer(make_token(editor, "read:drafts")))
    assert listing["Cache-Control"] == "private, no-cache"
    assert client.get("/api/v1/digests/")["Cache-Control"].startswith("public, max-age=60, s-maxage=")  # the edge policy (edge/)


def test_if_match_mismatch_is_412_in_the_error_shape(client, published_urls):
    response = client.get(published_urls["digest"], HTTP_IF_MATCH='"stale"')
    assert response.status_code == 412 and "changed" in response.json()["detail"]


RATES = {"list_ip": "3/m", "list_token": "2/m", "write_ip": "100/m", "write_token": "1/m"}


@override_settings(API_THROTTLE_RATES=RATES)
def test_lists_are_throttled_per_ip(client):
    codes = [client.get("/api/v1/digests/").status_code for _ in range(4)]
    assert codes == [200, 200, 200, 429]
    assert client.get("/api/v1/posts/").status_code == 429  # one budget for all lists per IP


@override_settings(API_THROTTLE_RATES=RATES)
def test_an_invented_x_forwarded_for_is_not_a_fresh_budget(client):
    """The edge appends to X-Forwarded-For what the client sent: keyed on it, every invented value was a
    new bucket (the token-guessing limit included). The address is the one the sign-in lockouts use."""
    codes = [client.get("/api/v1/digests/", HTTP_X_FORWARDED_FOR=f"203.0.113.{n}, 127.0.0.1").status_code
             for n in range(4)]
    assert codes == [200, 200, 200, 429]


@override_settings(API_THROTTLE_RATES=RATES, AXES_IPWARE_META_PRECEDENCE_ORDER=["HTTP_X_REAL_IP", "REMOTE_ADDR"])
def test_behind_the_edge_each_reader_address_has_its_own_budget(client):
    """X-Real-IP is what the VCL overwrites with the address it saw (deploy/varnish/default.vcl)."""
    first = [client.get("/api/v1/digests/", HTTP_X_REAL_IP="198.51.100.1").status_code for _ in range(4)]
    other = client.get("/api/v1/digests/", HTTP_X_REAL_IP="198.51.100.2").status_code
    assert (first, other) == ([200, 200, 200, 429], 200)


@override_settings(API_THROTTLE_RATES=RATES)
def test_throttled_answer_has_retry_after_and_the_error_shape(client):
    for _ in range(3):
        client.get("/api/v1/digests/")
    response = client.get("/api/v1/digests/")
    assert response.status_code == 429
    assert int(response["Retry-After"]) >= 1
    assert response.json()["detail"]


@override_settings(API_THROTTLE_RATES=RATES)
def test_writes_are_throttled_per_token(client, editor, make_token):
    first, second = make_token(editor, "write:content"), make_token(editor, "write:content")

    def write(raw):
        return client.post("/api/v1/authors/", {"slug": "x", "name": "X"}, content_type="application/json", **bearer(raw))

    assert write(first).status_code in (201, 422)
    assert write(first).status_code == 429
    assert write(second).status_code != 429  # another token has its own budget


@override_settings(API_THROTTLE_RATES={**RATES, "list_ip": "100/m"})
def test_lists_are_throttled_per_token(client, editor, make_token):
    raw = make_token(editor)
    codes = [client.get("/api/v1/topics/", **bearer(raw)).status_code for _ in range(3)]
    assert codes == [200, 200, 429]
    assert client.get("/api/v1/topics/").status_code == 200  # anonymous from the same IP still has budget


def test_details_are_not_throttled(client, published_urls):
    with override_settings(API_THROTTLE_RATES={**RATES, "list_ip": "1/m"}):
        assert all(client.get(published_urls["digest"]).status_code == 200 for _ in range(5))


def _redis_cache(settings, backend: str):
    """The default cache, `backend` on the Redis of REDIS_URL (skipped without one), under a key prefix of its own."""
    import os
    import uuid

    from django.core.cache import caches

    url = os.environ.get("REDIS_URL")
    if not url:
        pytest.skip("needs REDIS_URL (a real Redis; CI's PostgreSQL + Redis pass sets it)")
    prefix = f"throttle-test-{uuid.uuid4().hex}"
    settings.CACHES = {"default": {"BACKEND": backend, "LOCATION": url, "KEY_PREFIX": prefix}}
    yield caches["default"]
    redis = caches["default"]._cache.get_client(write=True)
    redis.delete(*redis.keys(f"{prefix}:*") or ["-"])  # only this test's keys: the database may be shared


@pytest.fixture
def redis_cache(settings):
    """The site's own Redis cache backend (what settings.base names when REDIS_URL is set)."""
    yield from _redis_cache(settings, "reader.cache_backend.RedisCache")


@pytest.fixture
def django_redis_cache(settings):
    """Django's stock Redis cache backend, which lends no client: the throttle falls back to ninja's code."""
    yield from _redis_cache(settings, "django.core.cache.backends.redis.RedisCache")


@override_settings(API_THROTTLE_RATES=RATES)
def test_on_redis_a_throttle_check_is_one_round_trip_and_throttles_the_same(client, redis_cache, monkeypatch):
    from redis import Redis

    from api.throttling import SLIDING_WINDOW_SCRIPT

    # A server that lacks the script (new, or restarted) answers NOSCRIPT once and redis-py loads it:
    # load it first, so the count below is of steady-state round trips on any server.
    redis_cache.client(write=True).script_load(SLIDING_WINDOW_SCRIPT)
    commands, execute = [], Redis.execute_command

    def recording(self, *args, **kwargs):
        commands.append(args[0])
        return execute(self, *args, **kwargs)

    monkeypatch.setattr(Redis, "execute_command", recording)
    codes = [client.get("/api/v1/digests/").status_code for _ in range(4)]
    assert codes == [200, 200, 200, 429]
    assert commands.count("EVALSHA") == 4 and {"GET", "SET"}.isdisjoint(commands)
    throttled = client.get("/api/v1/posts/")
    assert throttled.status_code == 429 and 1 <= int(throttled["Retry-After"]) <= 60
    assert throttled.json()["detail"]
    key = redis_cache.make_and_validate_key("api_throttle_list_ip_ip_127.0.0.1")
    client_ = redis_cache.client(key)
    assert client_.zcard(key) == 3 and 0 < client_.ttl(key) <= 60  # refused requests are not counted


@override_settings(API_THROTTLE_RATES=RATES)
def test_on_djangos_own_redis_cache_the_throttle_uses_ninjas_log_and_still_throttles(client, django_redis_cache,
                                                                                      monkeypatch):
    from redis import Redis

    commands, execute = [], Redis.execute_command

    def recording(self, *args, **kwargs):
        commands.append(args[0])
        return execute(self, *args, **kwargs)

    monkeypatch.setattr(Redis, "execute_command", recording)
    codes = [client.get("/api/v1/digests/").status_code for _ in range(4)]
    assert codes == [200, 200, 200, 429]
    assert "EVALSHA" not in commands and {"GET", "SET"} <= set(commands)
    assert django_redis_cache.get("api_throttle_list_ip_ip_127.0.0.1")  # ninja's pickled log of the window


def test_on_redis_requests_leave_the_window_after_its_duration(client, redis_cache, monkeypatch):
    from api.throttling import SettingsRateThrottle

    now = [1_000_000.0]
    monkeypatch.setattr(SettingsRateThrottle, "timer", lambda self: now[0])
    with override_settings(API_THROTTLE_RATES={**RATES, "list_ip": "2/m"}):
        assert [client.get("/api/v1/topics/").status_code for _ in range(3)] == [200, 200, 429]
        now[0] += 59.9
        assert client.get("/api/v1/topics/").status_code == 429
        now[0] += 0.2
        assert [client.get("/api/v1/topics/").status_code for _ in range(3)] == [200, 200, 429]


# --- token holders' answers are never public (issue 19) --------------------------------------


@pytest.mark.parametrize("scopes", [(), ("write:content",), ("read:drafts",)])
@pytest.mark.parametrize("kind", ["digest", "post", "reference"])
def test_published_objects_answered_to_a_token_are_never_public(client, published_urls, editor, make_token, kind, scopes):
    """A shared cache must not store what a token holder was answered (docs/api.md, Caching): even a
    published object, and its 304."""
    auth = bearer(make_token(editor, *scopes))
    expected = "private, no-cache"
    response = client.get(published_urls[kind], **auth)
    assert response.status_code == 200 and response["Cache-Control"] == expected
    assert "Authorization" in response["Vary"]
    revalidated = client.get(published_urls[kind], HTTP_IF_NONE_MATCH=response["ETag"], **auth)
    assert revalidated.status_code == 304 and revalidated["Cache-Control"] == expected


@pytest.mark.parametrize("url", ["/api/v1/digests/", "/api/v1/posts/", "/api/v1/references/", "/api/v1/topics/"])
def test_lists_answered_to_a_token_are_never_public(client, published_urls, editor, make_token, url):
    response = client.get(url, **bearer(make_token(editor)))
    assert response.status_code == 200 and response["Cache-Control"] == "private, no-cache"
    assert client.get(url)["Cache-Control"].startswith("public, max-age=60")  # anonymous: shared caches may keep it
