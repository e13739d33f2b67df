"""Events from content writes, signed per Standard Webhooks, retried on the schedule, in order, never twice."""
import json
from datetime import timedelta

import pytest
from django.utils import timezone
from standardwebhooks import Webhook

from blog.factories import PostFactory
from outbound import delivery, outbox
from outbound.models import Attempt, Delivery, Endpoint, Message
from publishing.workflow import Status

pytestmark = pytest.mark.django_db


def publish_post(django_capture_on_commit_callbacks, **kwargs):
    with django_capture_on_commit_callbacks(execute=True):
        return PostFactory(**kwargs)


def test_publishing_a_post_sends_post_published_signed_for_a_stock_verifier(
        endpoint, receiver, queued, django_capture_on_commit_callbacks):
    post = publish_post(django_capture_on_commit_callbacks, title="Hello subscribers")
    assert queued == [endpoint.pk]
    assert delivery.deliver_due(endpoint.pk) == 1
    [payload] = receiver.verified(endpoint.whsec)
    assert payload["type"] == "post.published"
    assert payload["data"]["id"] == post.pk and payload["data"]["title"] == "Hello subscribers"
    assert payload["data"]["body_html"]  # the API's detail JSON (PostOut)
    body, headers, _ = receiver.received[0]
    assert headers["Webhook-Id"].startswith("msg_") and headers["Webhook-Signature"].startswith("v1,")
    with pytest.raises(Exception):
        Webhook(Endpoint(secret=Endpoint().secret).whsec).verify(body, headers)  # another secret fails


def test_a_draft_edit_sends_nothing(endpoint, queued, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        post = PostFactory(status=Status.DRAFT, published_at=None)
        post.title = "Still a draft"
        post.save()
    assert not Message.objects.exists() and queued == []


def test_update_and_unpublish_follow_what_readers_see(endpoint, queued, django_capture_on_commit_callbacks):
    post = publish_post(django_capture_on_commit_callbacks)
    with django_capture_on_commit_callbacks(execute=True):
        post.save()  # nothing a subscriber sees changed but updated_at
        post.title = "A better title"
        post.save()
    with django_capture_on_commit_callbacks(execute=True):
        post.status = Status.DRAFT
        post.save()
    with django_capture_on_commit_callbacks(execute=True):
        post.title = "Edited while a draft"
        post.save()
    types = list(Message.objects.order_by("pk").values_list("type", flat=True))
    assert types[0] == "post.published" and types[-1] == "post.unpublished"
    assert "post.updated" in types and len(types) <= 4
    last = Message.objects.order_by("pk").last()
    assert last.payload["data"]["title"] == "A better title"  # the last public state, never the draft


def test_scheduled_post_is_announced_only_when_its_time_comes(endpoint, queued, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        post = PostFactory(published_at=timezone.now() + timedelta(hours=2))
    assert outbox.announce_due() == 0 and not Message.objects.exists()
    # its time comes: now, after the endpoint was created (an endpoint created later never hears "published")
    type(post).objects.filter(pk=post.pk).update(published_at=timezone.now())
    with django_capture_on_commit_callbacks(execute=True):
        assert outbox.announce_due() == 1
        assert outbox.announce_due() == 0
    assert Message.objects.get().type == "post.published"


def test_500_twice_then_delivered_on_the_third_attempt(endpoint, receiver, queued, django_capture_on_commit_callbacks):
    receiver.statuses = [500, 500]
    publish_post(django_capture_on_commit_callbacks)
    start = timezone.now()
    assert delivery.deliver_due(endpoint.pk, now=start) == 0
    assert delivery.deliver_due(endpoint.pk, now=start + timedelta(seconds=2)) == 0  # not due yet
    assert len(receiver.received) == 1
    assert delivery.deliver_due(endpoint.pk, now=start + timedelta(seconds=6)) == 0
    assert delivery.deliver_due(endpoint.pk, now=start + timedelta(minutes=4)) == 0  # the 5 min wait
    assert delivery.deliver_due(endpoint.pk, now=start + timedelta(minutes=6)) == 1
    assert [status for _, _, status in receiver.received] == [500, 500, 204]
    assert list(Attempt.objects.order_by("pk").values_list("number", "status_code")) == [(1, 500), (2, 500), (3, 204)]
    assert receiver.types() == ["post.published"]
    endpoint.refresh_from_db()
    assert endpoint.failing_since is None


def test_never_twice_after_a_2xx(endpoint, receiver, queued, django_capture_on_commit_callbacks):
    publish_post(django_capture_on_commit_callbacks)
    assert delivery.deliver_due(endpoint.pk) == 1
    assert delivery.deliver_due(endpoint.pk, now=timezone.now() + timedelta(days=1)) == 0
    assert delivery.sweep(now=timezone.now() + timedelta(days=1)) == 0
    assert len(receiver.received) == 1
    assert Delivery.objects.get().state == Delivery.State.SUCCEEDED


def test_a_receiver_down_for_a_while_gets_everything_in_order(
        endpoint, receiver, queued, django_capture_on_commit_callbacks):
    receiver.server.stop()  # connection refused: a network error, not an answer
    try:
        titles = [publish_post(django_capture_on_commit_callbacks, title=f"Post {n}").title for n in range(3)]
        start = timezone.now()
        assert delivery.deliver_due(endpoint.pk, now=start) == 0
        assert delivery.sweep(now=start + timedelta(seconds=1)) == 0  # posts 2 and 3 are due, but wait behind 1
        assert delivery.deliver_due(endpoint.pk, now=start + timedelta(seconds=6)) == 0
        attempts = list(Attempt.objects.order_by("pk"))
        assert len(attempts) == 2 and {a.message_id for a in attempts} == {Message.objects.order_by("pk")[0].pk}
        assert attempts[0].error and attempts[0].status_code is None
    finally:
        receiver.server.start()
    later = start + timedelta(minutes=6)
    assert delivery.sweep(now=later) == 1  # the beat sweep finds the overdue head
    assert delivery.deliver_due(endpoint.pk, now=later) == 3
    got = receiver.verified(endpoint.whsec)
    assert [p["data"]["title"] for p in got] == titles


def test_410_gone_disables_at_once(endpoint, receiver, queued, django_capture_on_commit_callbacks):
    receiver.statuses = [410]
    publish_post(django_capture_on_commit_callbacks)
    delivery.deliver_due(endpoint.pk)
    endpoint.refresh_from_db()
    assert not endpoint.enabled and "410" in endpoint.disabled_reason
    assert delivery.deliver_due(endpoint.pk, now=timezone.now() + timedelta(hours=1)) == 0
    assert len(receiver.received) == 1


def test_failing_for_five_days_disables(endpoint, receiver, queued, django_capture_on_commit_callbacks):
    receiver.statuses = [503] * 100
    start = timezone.now()
    clock = start
    while clock - start < timedelta(days=6):
        publish_post(django_capture_on_commit_callbacks)  # new messages keep arriving
        delivery.deliver_due(endpoint.pk, now=clock)
        endpoint.refresh_from_db()
        if not endpoint.enabled:
            break
        clock += timedelta(hours=3)
    assert not endpoint.enabled
    # disabled by the first failed attempt once 5 days have passed (the head may be in a 10 h wait then)
    assert timedelta(days=5) <= clock - start <= timedelta(days=5, hours=12)
    assert Attempt.objects.filter(attempted_at__lt=start + timedelta(days=5)).count() > 8
    assert "5 days" in endpoint.disabled_reason
    assert Delivery.objects.filter(state=Delivery.State.FAILED).exists()  # the first gave up after 8 attempts
    assert Attempt.objects.filter(message=Message.objects.order_by("pk")[0]).count() == 8


def test_rotation_signs_with_both_secrets_for_24_hours(endpoint, receiver, queued, django_capture_on_commit_callbacks):
    old = endpoint.whsec
    new = endpoint.rotate_secret()
    assert new != old and new.startswith("whsec_")
    publish_post(django_capture_on_commit_callbacks)
    delivery.deliver_due(endpoint.pk)
    body, headers, _ = receiver.received[0]
    assert len(headers["Webhook-Signature"].split(" ")) == 2
    assert Webhook(old).verify(body, headers)["type"] == "post.published"
    assert Webhook(new).verify(body, headers)["type"] == "post.published"
    publish_post(django_capture_on_commit_callbacks)
    delivery.deliver_due(endpoint.pk, now=timezone.now() + timedelta(hours=25))
    body, headers, _ = receiver.received[1]
    assert len(headers["Webhook-Signature"].split(" ")) == 1
    assert Webhook(new).verify(body, headers)
    with pytest.raises(Exception):
        Webhook(old).verify(body, headers)


def test_event_types_filter_endpoints(receiver, queued, django_capture_on_commit_callbacks):
    digests_only = Endpoint.objects.create(url=receiver.url, event_types=["digest.published"])
    everything = Endpoint.objects.create(url=receiver.url)
    publish_post(django_capture_on_commit_callbacks)
    assert list(Delivery.objects.values_list("endpoint_id", flat=True)) == [everything.pk]
    assert digests_only.pk not in queued


def test_payload_is_the_api_detail_json(endpoint, queued, client, django_capture_on_commit_callbacks):
    post = publish_post(django_capture_on_commit_callbacks, tags=["python"])
    api = client.get(f"/api/v1/posts/{post.slug}").json()
    message = Message.objects.get()
    assert message.payload["data"] == api
    assert set(message.payload) == {"type", "timestamp", "data"}
    assert json.loads(delivery.serialised(message)) == message.payload


def test_digests_too_and_deleting_a_public_item_unpublishes_it(
        endpoint, receiver, queued, client, django_capture_on_commit_callbacks):
    from digests.factories import DigestFactory

    with django_capture_on_commit_callbacks(execute=True):
        digest = DigestFactory(headline="Shipped today")
    message = Message.objects.get()
    assert message.type == "digest.published"
    assert message.payload["data"] == client.get(f"/api/v1/digests/{digest.slug}").json()
    with django_capture_on_commit_callbacks(execute=True):
        digest.delete()
    gone = Message.objects.order_by("pk").last()
    assert gone.type == "digest.unpublished" and gone.payload["data"]["headline"] == "Shipped today"
    assert delivery.deliver_due(endpoint.pk) == 2
    assert receiver.types() == ["digest.published", "digest.unpublished"]


def test_without_endpoints_content_writes_make_no_messages(queued, django_capture_on_commit_callbacks):
    publish_post(django_capture_on_commit_callbacks)
    assert not Message.objects.exists() and queued == []


def test_an_address_refused_at_send_time_is_a_failed_attempt(endpoint, receiver, queued, settings,
                                                             django_capture_on_commit_callbacks):
    publish_post(django_capture_on_commit_callbacks)
    settings.EGRESS_ALLOWED_NETWORKS = []  # the receiver on 127.0.0.1 is now out of bounds
    assert delivery.deliver_due(endpoint.pk) == 0
    attempt = Attempt.objects.get()
    assert attempt.status_code is None and "Refused" in attempt.error and not receiver.received
    assert Delivery.objects.get().state == Delivery.State.PENDING


def test_through_the_tasks_when_celery_runs_inline(endpoint, receiver, django_capture_on_commit_callbacks):
    """The SQLite run (no Redis): tasks run inline after commit; the PostgreSQL+Redis run uses test_worker.py."""
    from outbound.tasks import sweep_outbound
    from repojournal.celery import app

    if not app.conf.task_always_eager:
        pytest.skip("a real worker is configured: tests/outbound/test_worker.py covers this")
    publish_post(django_capture_on_commit_callbacks, title="Inline")
    assert receiver.verified(endpoint.whsec)[0]["data"]["title"] == "Inline"
    assert sweep_outbound.delay().get() == "announced 0, queued 0"
