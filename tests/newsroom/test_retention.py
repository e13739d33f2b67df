"""Retention (newsroom.retention): 90 days of traffic on a moved clock, each table settling at its bound.

Every simulated day writes what a busy day writes -- GitHub deliveries (one every 30 minutes:
the test's scale, not production's; each day is the same, so the bound is a number of days),
ingestion runs, redelivery requests, outbound messages with their deliveries and attempts,
failed sign-ins and access-log rows -- and then runs beat's prune at the day's end. Open
problems written on the first day (a delivery pending, one failed, a run still running, a
message an endpoint never acknowledged) and the newest message about each post must survive
all 90 days.
"""
import datetime
import threading

import pytest
from axes.models import AccessFailureLog, AccessLog
from django.core.management import call_command
from django.db import connection, connections
from django.utils import timezone

from digests.factories import RepositoryFactory
from ingestion.models import IngestionRun, RedeliveryRequest, TrackedRepository, WebhookDelivery
from newsroom import retention
from newsroom.models import PruneRecord
from outbound.models import Attempt, Delivery, Endpoint, Message

pytestmark = pytest.mark.django_db

START = datetime.datetime(2026, 1, 1, tzinfo=datetime.timezone.utc)
DAY = datetime.timedelta(days=1)
#: Rows each simulated day writes, per table.
PER_DAY = {"deliveries": 48, "runs": 24, "redeliveries": 2, "messages": 12, "failures": 10, "accesses": 10}
SUBJECTS = 5  # posts the messages are about


def moments(day: int, count: int) -> list[datetime.datetime]:
    """`count` moments spread over simulated day `day` (0 = START's day)."""
    return [START + day * DAY + index * (DAY / count) for index in range(count)]


class Traffic:
    def __init__(self):
        self.endpoint = Endpoint.objects.create(url="https://receiver.example/hook", description="subscriber")
        self.tracked = TrackedRepository.objects.create(repository=RepositoryFactory())
        self.serial = 0

    def guid(self) -> str:
        self.serial += 1
        return f"guid-{self.serial}"

    def day(self, day: int) -> None:
        WebhookDelivery.objects.bulk_create(
            WebhookDelivery(guid=self.guid(), event="push", body=b'{"zen": "ok"}', received_at=at,
                            state=WebhookDelivery.State.PROCESSED, processed_at=at)
            for at in moments(day, PER_DAY["deliveries"]))
        IngestionRun.objects.bulk_create(
            IngestionRun(source=IngestionRun.Source.POLL, subject="o/r", started_at=at, finished_at=at,
                         status=IngestionRun.Status.SUCCEEDED) for at in moments(day, PER_DAY["runs"]))
        RedeliveryRequest.objects.bulk_create(
            RedeliveryRequest(tracked=self.tracked, guid=self.guid(), delivery_id=self.serial, status_code=503,
                              requested_at=at) for at in moments(day, PER_DAY["redeliveries"]))
        messages = Message.objects.bulk_create(
            Message(type="post.updated", payload={}, subject_type="post", subject_id=index % SUBJECTS,
                    created_at=at) for index, at in enumerate(moments(day, PER_DAY["messages"])))
        Delivery.objects.bulk_create(
            Delivery(endpoint=self.endpoint, message=message, state=Delivery.State.SUCCEEDED, attempt_count=1,
                     succeeded_at=message.created_at) for message in messages)
        Attempt.objects.bulk_create(
            Attempt(endpoint=self.endpoint, message=message, number=1, status_code=204, succeeded=True,
                    attempted_at=message.created_at) for message in messages)
        for model, count in ((AccessFailureLog, PER_DAY["failures"]), (AccessLog, PER_DAY["accesses"])):
            rows = model.objects.bulk_create(model(username="ada", ip_address="192.0.2.1", user_agent="agent")
                                             for _ in range(count))
            for row, at in zip(rows, moments(day, count)):  # attempt_time is auto_now_add: set it after
                row.attempt_time = at
            model.objects.bulk_update(rows, ["attempt_time"])

    def open_problems(self) -> dict:
        """What the first day leaves open: none of it may be pruned, however old."""
        pending, failed = (WebhookDelivery.objects.create(guid=self.guid(), event="push", body=b"{}", received_at=START,
                                                          state=state)
                           for state in (WebhookDelivery.State.PENDING, WebhookDelivery.State.FAILED))
        running = IngestionRun.objects.create(source=IngestionRun.Source.FEED, subject="feed", started_at=START)
        unacknowledged = Message.objects.create(type="digest.published", payload={}, subject_type="digest",
                                                subject_id=1, created_at=START)
        Message.objects.create(type="digest.updated", payload={}, subject_type="digest", subject_id=1,
                               created_at=START + DAY)
        Delivery.objects.create(endpoint=self.endpoint, message=unacknowledged, state=Delivery.State.PENDING)
        return {"deliveries": {pending.pk, failed.pk}, "run": running.pk, "message": unacknowledged.pk}


def counts() -> dict[str, int]:
    return {
        "deliveries": WebhookDelivery.objects.count(),
        "bodies": WebhookDelivery.objects.exclude(body=b"").count(),
        "runs": IngestionRun.objects.count(),
        "redeliveries": RedeliveryRequest.objects.count(),
        "messages": Message.objects.count(),
        "attempts": Attempt.objects.count(),
        "failures": AccessFailureLog.objects.count(),
        "accesses": AccessLog.objects.count(),
    }


def test_ninety_days_of_traffic_settle_at_each_bound_and_keep_what_is_still_needed(settings):
    traffic = Traffic()
    kept = traffic.open_problems()
    history = []
    for day in range(90):
        traffic.day(day)
        retention.prune_all(now=START + (day + 1) * DAY)
        history.append(counts())

    # Each table's bound, measured after each day's prune: the days its rule keeps, whole, plus what
    # an open problem keeps (two deliveries with their bodies, a running run, two messages about a digest).
    rows_per_day = {"deliveries": "deliveries", "bodies": "deliveries", "runs": "runs", "redeliveries": "redeliveries",
                    "messages": "messages", "attempts": "messages", "failures": "failures", "accesses": "accesses"}
    days = {"deliveries": settings.RETENTION_WEBHOOK_DELIVERY_DAYS, "bodies": settings.RETENTION_WEBHOOK_BODY_DAYS,
            "runs": settings.RETENTION_INGESTION_RUN_DAYS, "redeliveries": settings.RETENTION_REDELIVERY_REQUEST_DAYS,
            "messages": settings.RETENTION_OUTBOUND_MESSAGE_DAYS, "attempts": settings.RETENTION_OUTBOUND_MESSAGE_DAYS,
            "failures": settings.RETENTION_SIGN_IN_FAILURE_DAYS, "accesses": settings.RETENTION_ACCESS_LOG_DAYS}
    open_rows = {"deliveries": 2, "bodies": 2, "runs": 1, "messages": 2}
    for table, kept_days in days.items():
        bound = PER_DAY[rows_per_day[table]] * kept_days + open_rows.get(table, 0)
        assert kept_days < 60  # so the simulation's last month is past every rule's window
        assert max(day[table] for day in history) == bound, f"{table} is not held at {bound}"
        assert [day[table] for day in history[-30:]] == [bound] * 30, f"{table} does not settle at {bound}"

    assert set(WebhookDelivery.objects.filter(pk__in=kept["deliveries"]).values_list("pk", flat=True)) == kept[
        "deliveries"]
    assert IngestionRun.objects.filter(pk=kept["run"], status=IngestionRun.Status.RUNNING).exists()
    assert Message.objects.filter(pk=kept["message"]).exists()  # never acknowledged
    newest = {subject: Message.objects.filter(subject_type="post", subject_id=subject).latest("pk").created_at
              for subject in range(SUBJECTS)}
    assert all(at >= START + 89 * DAY for at in newest.values())
    old = START + 80 * DAY
    assert not WebhookDelivery.objects.filter(received_at__lt=old, state=WebhookDelivery.State.PROCESSED,
                                              ).exclude(body=b"").exists()  # bodies go before rows
    assert set(PruneRecord.objects.values_list("rule", flat=True)) == {rule.name for rule in retention.RULES}


def test_dry_run_says_what_it_would_prune_and_prunes_nothing(capsys):
    traffic = Traffic()
    traffic.day(0)
    before = counts()
    call_command("prune", "--dry-run")
    out = capsys.readouterr().out
    assert counts() == before and not PruneRecord.objects.exists()
    # the day is 2026-01-01 and today is later: everything past its rule's days would go
    assert f"webhook deliveries: would prune {PER_DAY['deliveries']} (older than 30 days" in out
    assert f"sign-in failures: would prune {PER_DAY['failures']}" in out
    assert f"outbound messages: would prune {PER_DAY['messages'] - SUBJECTS}" in out  # the newest per post stay
    call_command("prune")
    assert "webhook deliveries: pruned 48" in capsys.readouterr().out
    assert WebhookDelivery.objects.count() == 0 and Message.objects.count() == SUBJECTS


def test_the_admin_lists_every_rule_with_its_setting_and_last_run(admin_client):
    page = admin_client.get("/admin/newsroom/prunerecord/").content.decode()
    for rule in retention.RULES:
        assert rule.name in page and rule.setting in page
    retention.prune_all()
    page = admin_client.get("/admin/newsroom/prunerecord/").content.decode()
    assert page.count("<td class=\"field-last_pruned\">0</td>") == len(retention.RULES)


@pytest.mark.parametrize("role", ["editor", "publisher"])
def test_the_retention_rules_are_the_operators_not_the_editorial_roles(client, request, role):
    client.force_login(request.getfixturevalue(role))
    assert client.get("/admin/newsroom/prunerecord/").status_code == 403


def test_reprocessing_a_delivery_whose_body_was_pruned_is_refused(admin_client):
    delivery = WebhookDelivery.objects.create(guid="emptied", event="push", body=b"",
                                              state=WebhookDelivery.State.PROCESSED)
    response = admin_client.post("/admin/ingestion/webhookdelivery/", {
        "action": "reprocess", "_selected_action": [delivery.pk]}, follow=True)
    assert "no longer hold their body" in response.content.decode()
    assert "Queued reprocessing for 0 item(s)" in response.content.decode()


@pytest.mark.skipif(connection.vendor != "postgresql",
                    reason="concurrent writers are PostgreSQL's; SQLite has one writer at a time (CI's PostgreSQL "
                           "pass runs it)")
@pytest.mark.django_db(transaction=True)
def test_two_prunes_at_once_prune_each_row_once():
    at = timezone.now() - 40 * DAY
    WebhookDelivery.objects.bulk_create(
        WebhookDelivery(guid=f"g{n}", event="push", body=b"{}", received_at=at, state=WebhookDelivery.State.PROCESSED)
        for n in range(3 * retention.BATCH))
    rule = next(rule for rule in retention.RULES if rule.name == "webhook deliveries")
    results, start = [], threading.Barrier(2)

    def run():
        try:
            start.wait(10)
            results.append(retention.prune(rule))
        except Exception as error:  # noqa: BLE001 -- reported below
            results.append(error)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=run) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert all(isinstance(result, int) for result in results), results
    assert sum(results) == 3 * retention.BATCH and not WebhookDelivery.objects.exists()


def test_abandoned_autosaves_are_pruned_after_their_days_and_recent_ones_kept(settings, editor, capsys):
    """An editor's unsaved changes (issue 37) nobody came back to within RETENTION_AUTOSAVE_DAYS go."""
    from blog.factories import PostFactory
    from editing.models import Autosave

    abandoned, recent = PostFactory(), PostFactory()
    Autosave.objects.keep(editor, abandoned, [["body", "Never saved"]])
    Autosave.objects.keep(editor, recent, [["body", "Still writing"]])
    now = timezone.now()
    Autosave.objects.filter(object_id=str(abandoned.pk)).update(
        saved_at=now - datetime.timedelta(days=settings.RETENTION_AUTOSAVE_DAYS, minutes=1))
    Autosave.objects.filter(object_id=str(recent.pk)).update(
        saved_at=now - datetime.timedelta(days=settings.RETENTION_AUTOSAVE_DAYS, minutes=-1))
    call_command("prune")
    assert "abandoned autosaves: pruned 1" in capsys.readouterr().out
    assert list(Autosave.objects.values_list("object_id", flat=True)) == [str(recent.pk)]
