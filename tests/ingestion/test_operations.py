"""Admin pages and actions, reprocess_deliveries, the sweep and poll schedule, the beat configuration."""
import datetime

import pytest
from celery.exceptions import Retry
from django.conf import settings
from django.core.cache import cache
from django.core.management import call_command
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from digests.factories import DigestFactory, RepositoryFactory
from digests.models import Reference
from ingestion.models import DigestDraft, FeedSource, IngestionRun, TrackedRepository, WebhookDelivery
from ingestion.polling import token_fingerprint
from ingestion.tasks import poll_repository
from ingestion.webhooks import pending_for_sweep
from repojournal.celery import app
from repojournal.workflow import Status

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


def test_sweep_only_takes_pending_deliveries_old_enough():
    now = timezone.now()
    old = make_delivery(1, received_at=now - datetime.timedelta(minutes=5))
    make_delivery(2, received_at=now)  # its task is probably still on its way
    make_delivery(3, received_at=now - datetime.timedelta(minutes=5), state="processed")
    make_delivery(4, received_at=now - datetime.timedelta(minutes=5), state="failed")
    assert list(pending_for_sweep(60)) == [old]


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
    lock = f"ingestion:github-token:{token_fingerprint(settings.GITHUB_TOKEN)}"
    assert cache.add(lock, "another poll", 60)
    try:
        with pytest.raises(Retry, match="30s"):
            poll_repository.apply(args=[tracked.pk], throw=True)
    finally:
        cache.delete(lock)
    tracked.refresh_from_db()
    assert tracked.last_polled_at is None  # it never started
    assert not IngestionRun.objects.exists()


def test_beat_schedule_names_registered_tasks():
    app.loader.import_default_modules()
    tasks = {entry["task"] for entry in settings.CELERY_BEAT_SCHEDULE.values()}
    assert {"ingestion.tasks.dispatch_due_polls", "ingestion.tasks.sweep_deliveries"} <= tasks
    assert tasks <= set(app.tasks)
