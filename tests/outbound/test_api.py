"""Managing one's own webhook endpoints over the API (scope ``webhooks``); bad input is a precise 4xx."""
import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from standardwebhooks import Webhook

from accounts.models import ApiToken
from outbound.models import Attempt, Endpoint, Message

pytestmark = pytest.mark.django_db
BASE = "/api/v1/webhooks/endpoints/"


@pytest.fixture
def user(django_user_model):
    return django_user_model.objects.create_user(username="subscriber", password="pw")


def auth(user, *scopes):
    return {"HTTP_AUTHORIZATION": f"Bearer {ApiToken.issue(user, 'hooks', scopes)[1]}"}


@pytest.fixture
def headers(user):
    return auth(user, "webhooks")


def create(client, headers, **body):
    return client.post(BASE, {"url": "http://127.0.0.1:9/hook", **body}, content_type="application/json", **headers)


def test_create_shows_the_secret_once_and_it_signs(client, headers, user):
    response = create(client, headers, description="CI", event_types=["post.published", "post.published"])
    assert response.status_code == 201, response.content
    body = response.json()
    assert body["secret"].startswith("whsec_") and body["event_types"] == ["post.published"]
    endpoint = Endpoint.objects.get(pk=body["id"])
    assert endpoint.owner == user and endpoint.whsec == body["secret"]
    Webhook(body["secret"])  # a stock verifier takes it as it is
    detail = client.get(f"{BASE}{body['id']}", **headers).json()
    assert "secret" not in detail and detail["url"] == "http://127.0.0.1:9/hook"
    assert [item["id"] for item in client.get(BASE, **headers).json()] == [body["id"]]


def test_update_rotate_delete(client, headers):
    endpoint_id = create(client, headers).json()["id"]
    Endpoint.objects.filter(pk=endpoint_id).update(enabled=False, disabled_reason="410 Gone")
    changed = client.patch(f"{BASE}{endpoint_id}", {"enabled": True, "event_types": []},
                           content_type="application/json", **headers)
    assert changed.status_code == 200 and changed.json()["enabled"] and changed.json()["disabled_reason"] == ""
    old = Endpoint.objects.get(pk=endpoint_id).whsec
    rotated = client.post(f"{BASE}{endpoint_id}/rotate-secret", **headers).json()
    assert rotated["secret"] != old and rotated["previous_secret_expires_at"]
    assert Endpoint.objects.get(pk=endpoint_id).signing_secrets() == [rotated["secret"][6:], old[6:]]
    assert client.delete(f"{BASE}{endpoint_id}", **headers).status_code == 204
    assert not Endpoint.objects.exists()


@pytest.mark.parametrize(("body", "field"), [
    ({"url": "ftp://example.com/hook"}, "body.url"),
    ({"url": "http://10.0.0.1/hook"}, "body.url"),
    ({"url": "http://169.254.169.254/latest"}, "body.url"),
    ({"event_types": ["post.deleted"]}, "body.event_types.0"),
    ({"description": "x\x00y"}, "body.description"),
])
def test_bad_input_is_a_precise_422(client, headers, body, field):
    response = create(client, headers, **body)
    assert response.status_code == 422, response.content
    assert field in [error["field"] for error in response.json()["errors"]]
    assert not Endpoint.objects.exists()


def test_https_is_required_when_the_setting_says_so(client, headers, settings):
    settings.OUTBOUND_REQUIRE_HTTPS = True
    response = create(client, headers)
    assert response.status_code == 422 and response.json()["errors"][0]["field"] == "body.url"


def test_scope_and_ownership(client, user, headers, django_user_model):
    other = django_user_model.objects.create_user(username="other", password="pw")
    theirs = Endpoint.objects.create(url="http://127.0.0.1:9/x", owner=other)
    assert client.get(BASE, **auth(user, "read:drafts")).status_code == 403
    assert client.get(BASE).status_code == 401
    assert client.get(f"{BASE}{theirs.pk}", **headers).status_code == 404
    assert client.delete(f"{BASE}{theirs.pk}", **headers).status_code == 404
    assert client.get(f"{BASE}99999999999999999999999", **headers).status_code == 422
    assert client.get(BASE, **headers).json() == []
    assert Endpoint.objects.filter(pk=theirs.pk).exists()


def test_attempts_log(client, headers, user):
    endpoint = Endpoint.objects.create(url="http://127.0.0.1:9/x", owner=user)
    message = Message.objects.create(type="post.published", payload={})
    Attempt.objects.create(endpoint=endpoint, message=message, number=1, status_code=500, response_excerpt="boom")
    [attempt] = client.get(f"{BASE}{endpoint.pk}/attempts", **headers).json()
    assert attempt["message_id"] == message.msg_id and attempt["status_code"] == 500


def test_list_query_count_does_not_grow(client, headers, user):
    def queries():
        with CaptureQueriesContext(connection) as captured:
            assert client.get(BASE, **headers).status_code == 200
        return len(captured)

    client.get(BASE, **headers)  # the token's first use writes last_used_at
    Endpoint.objects.bulk_create([Endpoint(url=f"http://127.0.0.1:9/{n}", owner=user) for n in range(2)])
    few = queries()
    Endpoint.objects.bulk_create([Endpoint(url=f"http://127.0.0.1:9/{n}", owner=user) for n in range(15)])
    assert queries() == few


def test_the_api_offers_exactly_the_events_there_are():
    from typing import get_args

    from outbound.models import EVENT_TYPES
    from outbound.schemas import EventType

    assert list(get_args(EventType)) == EVENT_TYPES
