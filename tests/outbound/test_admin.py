"""The admin: secret shown once, attempts and success rate, rotate, test event, retry now, replay since …"""
import json

import pytest
from django.contrib.admin.helpers import ACTION_CHECKBOX_NAME
from django.utils import timezone

from outbound import delivery
from outbound.models import Attempt, Delivery, Endpoint, Message

pytestmark = pytest.mark.django_db
CHANGELIST = "/admin/outbound/endpoint/"


@pytest.fixture
def admin_client(client, django_user_model, django_capture_on_commit_callbacks):
    client.force_login(django_user_model.objects.create_superuser("root", "root@example.com", "pw"))
    client.on_commit = django_capture_on_commit_callbacks
    return client


def action(admin_client, name, endpoints, url=CHANGELIST, **extra):
    data = {"action": name, ACTION_CHECKBOX_NAME: [e.pk for e in endpoints], **extra}
    with admin_client.on_commit(execute=True):
        return admin_client.post(url, data, follow=True)


def test_the_secret_is_shown_once_on_creation(admin_client, receiver):
    response = admin_client.post(f"{CHANGELIST}add/", {"url": receiver.url, "description": "hooks",
                                                       "enabled": "on", "event_types": ["post.published"]},
                                 follow=True)
    endpoint = Endpoint.objects.get()
    assert endpoint.whsec in response.content.decode() and endpoint.event_types == ["post.published"]
    page = admin_client.get(f"{CHANGELIST}{endpoint.pk}/change/").content.decode()
    assert endpoint.secret not in page


def test_a_private_address_is_refused(admin_client, settings):
    settings.EGRESS_ALLOWED_NETWORKS = []
    response = admin_client.post(f"{CHANGELIST}add/", {"url": "http://127.0.0.1:8000/hook", "enabled": "on"})
    assert response.status_code == 200 and not Endpoint.objects.exists()
    assert response.context["adminform"].form.errors["url"]


def test_attempts_success_rate_and_disabled_reason_show(admin_client, endpoint):
    message = Message.objects.create(type="post.published", payload={})
    Attempt.objects.create(endpoint=endpoint, message=message, number=1, status_code=500, response_excerpt="boom")
    Attempt.objects.create(endpoint=endpoint, message=message, number=2, status_code=204, succeeded=True)
    endpoint.disable("The endpoint answered 410 Gone.")
    listing = admin_client.get(CHANGELIST).content.decode()
    assert "50%" in listing and "410 Gone" in listing
    page = admin_client.get(f"{CHANGELIST}{endpoint.pk}/change/").content.decode()
    assert "boom" in page and "post.published" in page
    assert admin_client.get(f"/admin/outbound/message/{message.pk}/change/").status_code == 200


def test_rotate_and_send_test_event(admin_client, endpoint, receiver, queued):
    old = endpoint.secret
    response = action(admin_client, "rotate_secret", [endpoint])
    endpoint.refresh_from_db()
    assert endpoint.previous_secret == old and endpoint.whsec in response.content.decode()
    action(admin_client, "send_test_event", [endpoint])
    assert queued == [endpoint.pk]
    delivery.deliver_due(endpoint.pk)
    assert receiver.types() == ["webhook.test"]
    assert receiver.verified(endpoint.whsec)[0]["data"]["endpoint"] == endpoint.pk


def test_retry_now_makes_a_waiting_delivery_due(admin_client, endpoint, queued):
    message = Message.objects.create(type="post.published", payload={})
    later = timezone.now() + timezone.timedelta(hours=5)
    waiting = Delivery.objects.create(endpoint=endpoint, message=message, next_attempt_at=later, attempt_count=4)
    action(admin_client, "retry_now", [endpoint])
    waiting.refresh_from_db()
    assert waiting.next_attempt_at <= timezone.now() and queued == [endpoint.pk]


def test_replay_since_asks_for_a_time_then_resends_in_order(admin_client, endpoint, receiver, queued):
    old = Message.objects.create(type="post.published", payload={"type": "post.published", "n": 0},
                                 created_at=timezone.now() - timezone.timedelta(days=3))
    recent = [Message.objects.create(type="post.updated", payload={"type": "post.updated", "n": n}) for n in (1, 2)]
    for message in (old, *recent):
        Delivery.objects.create(endpoint=endpoint, message=message, state=Delivery.State.SUCCEEDED)
    form = action(admin_client, "replay_since", [endpoint])
    assert b"Replay messages created since" in form.content
    since = timezone.now() - timezone.timedelta(days=1)
    done = action(admin_client, "replay_since", [endpoint], apply="Replay",
                  since_0=since.strftime("%Y-%m-%d"), since_1=since.strftime("%H:%M:%S"))
    assert b"Replaying 2 message(s)" in done.content
    delivery.deliver_due(endpoint.pk)
    assert [json.loads(body)["n"] for body, _, _ in receiver.received] == [1, 2]


def test_message_actions(admin_client, endpoint, queued):
    message = Message.objects.create(type="post.published", payload={"type": "post.published"})
    Delivery.objects.create(endpoint=endpoint, message=message, state=Delivery.State.FAILED, next_attempt_at=None)
    action(admin_client, "retry_now", [message], url="/admin/outbound/message/")
    assert Delivery.objects.get().state == Delivery.State.PENDING
    Delivery.objects.update(state=Delivery.State.SUCCEEDED)
    action(admin_client, "replay", [message], url="/admin/outbound/message/")
    assert Delivery.objects.get().state == Delivery.State.PENDING and queued
