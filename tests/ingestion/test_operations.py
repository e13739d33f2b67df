"""Admin pages and actions, reprocess_deliveries, the sweep and poll schedule, the beat configuration."""
import datetime

import pytest
from celery.exceptions import Retry
from django.conf import settings
from django.contrib import admin as django_admin
from django.contrib.messages.storage.fallback import FallbackStorage
from django.core.management import CommandError, call_command
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from digests.factories import DigestFactory, ReferenceFactory, RepositoryFactory
from digests.models import Digest, Reference
from ingestion.admin import regenerate_digests
from ingestion.models import DigestDraft, FeedSource, IngestionRun, TrackedRepository, WebhookDelivery
from ingestion.polling import token_lock
from ingestion.tasks import poll_repository
from ingestion.deliveries import pending_for_sweep
from repojournal.celery import app
from publishing.workflow import Status

from .conftest import HELLO_WORLD, fixture_body

pytestmark = pytest.mark.django_db


def make_delivery(n: int, **fields) -> WebhookDelivery:
    defaults = {"guid": f"guid-{n}", "event": "pull_request", "action": "opened", "body": fixture_body(
        "pull_request.opened"), "repository_full_name": HELLO_WORLD}
    return WebhookDelivery.objects.create(**{**defaults, **fields})


def make_rows(count: int, start: int = 0) -> None:
    for n in range(start, start + count):
        delivery = make_delivery(n)
        IngestionRun.objects.create(source="webhook", subject=delivery.guid, delivery=delivery, error="x" * 200)
        TrackedRepository.objects.create(repository=RepositoryFactory(full_name=f"owner{n}/repo{n}"))
        DigestDraft.objects.create(digest=DigestFactory(status=Status.DRAFT), report="generated")
        FeedSource.objects.create(url=f"https://example.com/{n}/feed.xml")


CHANGELISTS = ["webhookdelivery", "ingestionrun", "trackedrepository", "digestdraft", "feedsource"]


@pytest.mark.parametrize("model", CHANGELISTS)
def test_changelist_queries_do_not_grow_with_rows(model, admin_client):
    url = f"/admin/ingestion/{model}/"

    def count_queries() -> int:
        with CaptureQueriesContext(connection) as queries:
            assert admin_client.get(url).status_code == 200
        return len(queries)

    make_rows(3)
    few = count_queries()
    make_rows(27, start=3)
    assert count_queries() == few


def test_delivery_page_shows_the_raw_body_escaped(admin_client):
    delivery = make_delivery(1, body=b'{"title": "<script>alert(1)</script>"}')
    response = admin_client.get(f"/admin/ingestion/webhookdelivery/{delivery.pk}/change/")
    assert response.status_code == 200
    assert b"&lt;script&gt;alert(1)&lt;/script&gt;" in response.content
    assert b"<script>alert(1)" not in response.content


def test_reprocess_action_queues_after_commit(admin_client, django_capture_on_commit_callbacks):
    deliveries = [make_delivery(n, state="failed") for n in range(3)]
    with django_capture_on_commit_callbacks() as callbacks:
        response = admin_client.post("/admin/ingestion/webhookdelivery/", {
            "action": "reprocess", "_selected_action": [d.pk for d in deliveries[:2]],
        }, follow=True)
    assert response.status_code == 200
    assert "Queued reprocessing for 2 item(s)." in response.content.decode()
    assert len(callbacks) == 2


def test_editors_without_change_permission_cannot_reprocess(client, editor):
    from django.contrib.auth.models import Permission

    editor.user_permissions.add(Permission.objects.get(codename="view_webhookdelivery"))
    client.force_login(editor)
    response = client.get("/admin/ingestion/webhookdelivery/")
    assert response.status_code == 200
    assert b"Reprocess selected deliveries" not in response.content


def test_reprocess_deliveries_picks_up_ignored_ones_after_tracking(tracked, capsys):
    tracked.enabled = False
    tracked.save()
    call_command("reprocess_deliveries")  # nothing failed or pending yet
    make_delivery(1, state="ignored")
    make_delivery(2, state="failed")
    tracked.enabled = True
    tracked.save()
    call_command("reprocess_deliveries", "--state", "ignored", "--state", "failed")
    assert "Reprocessed deliveries: 2 processed." in capsys.readouterr().out
    assert set(WebhookDelivery.objects.values_list("state", flat=True)) == {"processed"}
    assert Reference.objects.count() == 1
    call_command("reprocess_deliveries", "guid-1")
    assert Reference.objects.count() == 1
    assert IngestionRun.objects.filter(delivery__guid="guid-1").order_by("id").last().unchanged == 1


def test_sweep_takes_pending_deliveries_old_enough_and_failed_ones_whose_retry_is_due():
    now = timezone.now()
    old = make_delivery(1, received_at=now - datetime.timedelta(minutes=5))
    make_delivery(2, received_at=now)  # its task is probably still on its way
    make_delivery(3, received_at=now - datetime.timedelta(minutes=5), state="processed")
    make_delivery(4, received_at=now - datetime.timedelta(minutes=5), state="failed")  # tried for the last time
    make_delivery(5, state="failed", retry_at=now + datetime.timedelta(minutes=1))
    due = make_delivery(6, state="failed", retry_at=now - datetime.timedelta(seconds=1))
    assert sorted(pending_for_sweep(60), key=lambda delivery: delivery.pk) == [old, due]


def test_due_polls_respect_each_interval():
    now = timezone.now()
    never = TrackedRepository.objects.create(repository=RepositoryFactory())
    due = TrackedRepository.objects.create(repository=RepositoryFactory(), last_polled_at=now - datetime.timedelta(
        hours=2))
    TrackedRepository.objects.create(repository=RepositoryFactory(), last_polled_at=now - datetime.timedelta(
        minutes=10))
    TrackedRepository.objects.create(repository=RepositoryFactory(), enabled=False)
    TrackedRepository.objects.create(repository=RepositoryFactory(), last_polled_at=now - datetime.timedelta(
        minutes=10), poll_interval=datetime.timedelta(minutes=5))
    assert sorted(t.pk for t in TrackedRepository.objects.due(now)) == sorted(
        [never.pk, due.pk, TrackedRepository.objects.last().pk]
    )


def test_a_second_poll_on_the_same_token_waits_for_the_first(settings):
    tracked = TrackedRepository.objects.create(repository=RepositoryFactory())
    with token_lock(settings.GITHUB_TOKEN):
        with pytest.raises(Retry, match="30s"):
            poll_repository.apply(args=[tracked.pk], throw=True)
        with pytest.raises(CommandError, match="another poll"):
            call_command("ingest_github", tracked.repository.full_name, "--wait", "0")
    tracked.refresh_from_db()
    assert tracked.last_polled_at is None  # it never started
    assert not IngestionRun.objects.exists()


def test_beat_schedule_names_registered_tasks():
    app.loader.import_default_modules()
    tasks = {entry["task"] for entry in settings.CELERY_BEAT_SCHEDULE.values()}
    assert {"ingestion.tasks.dispatch_due_polls", "ingestion.tasks.sweep_deliveries"} <= tasks
    assert tasks <= set(app.tasks)


def test_admin_drafts_a_digest_for_a_topic_and_day(admin_client):
    topic = DigestFactory(status=Status.DRAFT).topic
    repository = RepositoryFactory(topic=topic)
    day = datetime.date(2026, 6, 29)
    ReferenceFactory(repository=repository, merged_at=datetime.datetime(2026, 6, 29, 12, tzinfo=datetime.UTC))
    assert admin_client.get("/admin/ingestion/digestdraft/add/").status_code == 200
    response = admin_client.post("/admin/ingestion/digestdraft/add/", {"topic": topic.pk, "date": "2026-06-29"})
    digest = topic.digests.get(date=day)
    assert response.status_code == 302
    assert response["Location"] == f"/admin/digests/digest/{digest.pk}/change/"
    assert digest.status == Status.DRAFT and digest.digest_references.count() == 1
    quiet = admin_client.post("/admin/ingestion/digestdraft/add/", {"topic": topic.pk, "date": "2026-06-30"},
                              follow=True)
    assert "no digest drafted" in quiet.content.decode()


def test_admin_draft_form_refuses_bad_input_and_non_editors(admin_client, client, django_user_model):
    response = admin_client.post("/admin/ingestion/digestdraft/add/", {"topic": "", "date": "someday"})
    assert response.status_code == 200
    assert response.context["form"].errors.keys() == {"topic", "date"}
    staff = django_user_model.objects.create_user("staff", password="pw", is_staff=True)
    client.force_login(staff)
    assert client.get("/admin/ingestion/digestdraft/add/").status_code == 403


def test_regenerate_digests_action_for_the_digest_admin(rf, admin_user):
    digest = DigestFactory(status=Status.DRAFT)
    ReferenceFactory(repository=RepositoryFactory(topic=digest.topic),
                     merged_at=datetime.datetime.combine(digest.date, datetime.time(9), tzinfo=datetime.UTC))
    request = rf.post("/admin/digests/digest/")
    request.user = admin_user
    request.session = {}
    request._messages = FallbackStorage(request)
    regenerate_digests(django_admin.site._registry[Digest], request, Digest.objects.filter(pk=digest.pk))
    assert digest.digest_references.count() == 1
    assert "Refreshed draft" in [str(m) for m in request._messages][0]


def test_a_failed_delivery_is_tried_again_by_the_sweep_not_by_a_countdown_a_killed_worker_takes_along(
        tracked, monkeypatch, settings):
    """Its next try lives in the row (``retry_at``): a Celery countdown lived only in the worker holding it."""
    from ingestion import deliveries, tasks

    delivery = make_delivery(1)
    calls = []

    def failing_once(delivery):
        calls.append(delivery.pk)
        if len(calls) == 1:
            raise RuntimeError("the database blinked")
        return original(delivery)

    original = deliveries.handle
    monkeypatch.setattr(deliveries, "handle", failing_once)
    before = timezone.now()
    assert tasks.process_delivery_task.apply(args=[delivery.pk]).get().startswith("failed")
    delivery.refresh_from_db()
    assert delivery.state == "failed" and delivery.attempts == 1
    assert before + datetime.timedelta(seconds=30) <= delivery.retry_at <= timezone.now() + datetime.timedelta(seconds=30)
    settings.INGESTION_SWEEP_AFTER = 0
    monkeypatch.setattr(tasks, "queue_delivery", lambda pk: tasks.process_delivery_task.apply(args=[pk]))  # a worker
    assert tasks.sweep_deliveries() == 0, "not due yet"
    WebhookDelivery.objects.filter(pk=delivery.pk).update(retry_at=timezone.now())
    assert tasks.sweep_deliveries() == 1
    delivery.refresh_from_db()
    assert (delivery.state, delivery.retry_at, len(calls)) == ("processed", None, 2)


def test_after_its_last_try_a_failed_delivery_waits_for_an_editor():
    from ingestion import deliveries

    assert [deliveries.retry_at(n) is None for n in range(1, 8)] == [False] * 5 + [True] * 2
