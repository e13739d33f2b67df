"""Subscribers exported to CSV and imported from it, through the admin."""
import csv
import io

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from newsletters import csv_io, imports, tasks
from newsletters.admin import MAX_UPLOAD_BYTES
from newsletters.models import Subscriber, SubscriberImport, Subscription, Suppression

pytestmark = pytest.mark.django_db

EXPORT = reverse("admin:newsletters_subscriber_export")
IMPORT = reverse("admin:newsletters_subscriber_import")
CHANGELIST = reverse("admin:newsletters_subscriber_changelist")


def upload(client, text: str | bytes, consented: bool = False, name: str = "people.csv"):
    data = text.encode() if isinstance(text, str) else text
    form = {"file": SimpleUploadedFile(name, data, content_type="text/csv")}
    if consented:
        form["consented"] = "on"
    return client.post(IMPORT, form, follow=True)


@pytest.fixture
def worker(monkeypatch, django_capture_on_commit_callbacks):
    """The Celery worker's part: ``with worker() as queued:`` records what commits queue (task name and
    arguments), and ``worker.run()`` then runs it as the worker would, the confirmations' sender included."""

    class Worker:
        def __init__(self):
            self.queued: list[tuple[str, tuple]] = []

        def __call__(self):
            return django_capture_on_commit_callbacks(execute=True)

        def run(self):
            while self.queued:
                name, args = self.queued.pop(0)
                getattr(tasks, name).run(*args)

    worker = Worker()
    for name in ("import_subscribers", "send_confirmations", "send_confirmation"):
        monkeypatch.setattr(getattr(tasks, name), "apply_async",
                            lambda args=(), name=name, **options: worker.queued.append((name, tuple(args or ()))))
    return worker


def imported(client, worker, text: str | bytes, consented: bool = False) -> str:
    """Upload `text`, have the worker import it (and send what it owes); the import's page once done."""
    with worker():
        response = upload(client, text, consented)
    assert response.status_code == 200 and response.redirect_chain[-1][0].startswith(IMPORT)
    worker.run()
    return client.get(response.redirect_chain[-1][0]).content.decode()


def summary(job: SubscriberImport) -> str:
    return (f"{job.state}: {job.created} new, {job.existing} already there, {job.suppressed} suppressed, "
            f"{job.invalid_count} invalid, {job.confirmations} confirmations")


def exported(response) -> list[dict]:
    assert response.streaming
    assert response["Content-Type"] == "text/csv; charset=utf-8"
    assert response["Content-Disposition"].startswith('attachment; filename="subscribers-')
    text = b"".join(response.streaming_content).decode()
    return list(csv.DictReader(io.StringIO(text)))


def person(email: str, state="confirmed", follows=(("wire", ""),), cadence="immediate") -> Subscriber:
    subscriber = Subscriber.objects.create(email=email, state=state)
    for kind, target in follows:
        Subscription.objects.create(subscriber=subscriber, kind=kind, target=target, cadence=cadence)
    return subscriber


@pytest.fixture(params=["publisher", "superuser"])
def keeper(request, client, admin_user):
    """Who keeps the list: a Publisher (newsletters 0006 grants it) and a superuser alike."""
    client.force_login(request.getfixturevalue("publisher") if request.param == "publisher" else admin_user)
    return client


def test_export_writes_each_subscriber_with_what_they_follow(keeper):
    admin_client = keeper
    person("ada@example.org", follows=[("wire", ""), ("tag", "python"), ("repository", "django/django")])
    person("bob@example.org", state="pending", follows=[("blog", "")], cadence="daily")
    rows = {row["email"]: row for row in exported(admin_client.get(EXPORT))}
    assert list(rows["ada@example.org"]) == csv_io.HEADER
    assert rows["ada@example.org"]["follows"] == "repository:django/django tag:python wire"
    assert (rows["ada@example.org"]["cadence"], rows["ada@example.org"]["state"]) == ("immediate", "confirmed")
    assert (rows["bob@example.org"]["follows"], rows["bob@example.org"]["cadence"]) == ("blog", "daily@08:00")
    assert rows["bob@example.org"]["confirmed_at"] == ""


def test_the_export_action_exports_the_selection(admin_client):
    chosen, _other = person("ada@example.org"), person("bob@example.org")
    response = admin_client.post(CHANGELIST, {"action": "export_csv", "_selected_action": [chosen.pk]})
    assert [row["email"] for row in exported(response)] == ["ada@example.org"]


def test_cells_a_spreadsheet_would_run_are_defused(admin_client):
    person("=cmd@example.org", follows=[("tag", "=HYPERLINK(\"http://evil\")"), ("author", "+1"), ("topic", "-x"),
                                        ("tag", "@sum")])
    row = exported(admin_client.get(EXPORT))[0]
    assert row["email"] == "'=cmd@example.org"
    assert row["follows"] == "author:+1 tag:=HYPERLINK(\"http://evil\") tag:@sum topic:-x"  # not at a cell's start
    assert [csv_io.guard(v) for v in ["=1", "+1", "-1", "@A", "\tx", "ok", None]] == [
        "'=1", "'+1", "'-1", "'@A", "'\tx", "ok", ""]


def test_export_then_import_into_an_empty_database_gives_the_same_subscribers(admin_client, worker):
    person("ada@example.org", follows=[("wire", ""), ("tag", "python")])
    person("bob@example.org", state="pending", follows=[("blog", "")], cadence="daily")
    person("cy@example.org", state="unsubscribed", follows=[])
    mixed = person("dee@example.org", follows=[("wire", "")])
    Subscription.objects.create(subscriber=mixed, kind="author", target="simon", cadence="daily", daily_at="18:30")

    def snapshot():
        return {(s.email, s.state, tuple(sorted((x.kind, x.target, x.cadence, str(x.daily_at))
                                                for x in s.subscriptions.all())))
                for s in Subscriber.objects.prefetch_related("subscriptions")}

    before = snapshot()
    text = b"".join(admin_client.get(EXPORT).streaming_content)
    Subscriber.objects.all().delete()
    assert "Imported 4 new subscriber(s)" in imported(admin_client, worker, text, consented=True)
    assert snapshot() == before
    assert Subscriber.objects.get(email="ada@example.org").consent == "imported_consent"


def test_import_without_consent_asks_each_new_address_to_confirm(admin_client, smtp_server, worker):
    text = "email,follows,cadence\nAda@Example.ORG,tag:python wire,\nbob@example.org,,daily\n"
    assert "Confirmation emails owed: 2." in imported(admin_client, worker, text)
    ada = Subscriber.objects.get(email="Ada@example.org")  # normalised: the domain lower-cased
    assert (ada.state, ada.consent, ada.confirmed_at) == ("pending", "imported", None)
    assert ada.confirmation_sent_at is not None  # requested, and sent (the debt cleared)
    assert sorted(ada.subscriptions.values_list("kind", "target")) == [("tag", "python"), ("wire", "")]
    assert not ada.subscriptions.filter(confirmed_at__isnull=False).exists()
    bob = Subscriber.objects.get(email="bob@example.org")
    assert list(bob.subscriptions.values_list("kind", "cadence")) == [("wire", "daily")]
    assert len(smtp_server.to("Ada@example.org")) == 1 and len(smtp_server.to("bob@example.org")) == 1
    assert len(smtp_server.messages) == 2


def test_import_with_stated_consent_confirms_and_sends_nothing(admin_client, smtp_server, worker):
    imported(admin_client, worker, "ada@example.org,blog\n", consented=True)
    ada = Subscriber.objects.get()
    assert (ada.state, ada.consent) == ("confirmed", "imported_consent")
    assert ada.confirmed_at is not None and ada.confirmation_requested_at is None
    assert ada.subscriptions.get().confirmed_at is not None
    assert smtp_server.messages == [] and worker.queued == []


def test_bad_rows_are_reported_by_line_and_the_rest_imported(admin_client, worker):
    person("old@example.org", state="unsubscribed")
    Suppression.objects.create(email="bounced@example.org", reason="bounced")
    text = ("email,follows,cadence\n"
            "ada@example.org,wire,\n"
            "not an address,wire,\n"
            "bob@example.org,planet:mars,\n"
            "old@example.org,wire,\n"
            "bounced@example.org,wire,\n"
            "cy@example.org,tag,\n"
            "dee@example.org,wire,weekly\n"
            "ada@example.org,blog,\n"
            "eve@example.org\n")
    page = imported(admin_client, worker, text, consented=True)
    assert "Imported 2 new subscriber(s); 1 row(s) already there, 1 suppressed, 4 invalid" in page
    for line in (3, 4, 7, 8):
        assert f"Line {line} skipped" in page
    assert sorted(Subscriber.objects.values_list("email", flat=True)) == [
        "ada@example.org", "eve@example.org", "old@example.org"]
    assert Subscriber.objects.get(email="old@example.org").state == "unsubscribed"  # left as it was
    assert sorted(Subscription.objects.filter(subscriber__email="ada@example.org")
                  .values_list("kind", flat=True)) == ["blog", "wire"]  # a repeated address adds its follows
    assert list(Subscription.objects.filter(subscriber__email="eve@example.org").values_list("kind", flat=True)) == [
        "wire"]


def test_importing_twice_duplicates_no_one(keeper, worker):
    admin_client = keeper
    imported(admin_client, worker, "ada@example.org\nbob@example.org\n", consented=True)
    page = imported(admin_client, worker, "ada@example.org\nbob@example.org\n", consented=True)
    assert "Imported 0 new subscriber(s); 2 row(s) already there" in page
    assert Subscriber.objects.count() == 2


@pytest.mark.parametrize("data, error", [
    (b"\xff\xfeE\x00M\x00", "not UTF-8"),
    (b"a" * (MAX_UPLOAD_BYTES + 1), "at most 10 MB"),
])
def test_a_file_that_cannot_be_read_is_a_form_error(admin_client, data, error):
    response = upload(admin_client, data)
    assert response.status_code == 400
    assert error in response.content.decode()
    assert not Subscriber.objects.exists() and not SubscriberImport.objects.exists()


def test_no_file_is_a_form_error(admin_client):
    response = admin_client.post(IMPORT, {})
    assert response.status_code == 400 and "This field is required" in response.content.decode()


def test_a_line_with_a_nul_byte_is_reported_not_a_500(admin_client, worker):
    page = imported(admin_client, worker, "ada@example.org\nb\x00b@example.org\n", consented=True)
    assert "Line 2 skipped" in page
    assert list(Subscriber.objects.values_list("email", flat=True)) == ["ada@example.org"]


def test_an_import_records_each_confirmation_owed_before_any_is_sent(admin_client, worker):
    """The debt is written with the subscriber; the email follows (the sweep sends it if the task is lost)."""
    with worker():
        upload(admin_client, "ada@example.org\n")
    [(name, args)] = worker.queued
    imports.run(*args)  # the import, and not the sender of confirmations it would queue
    ada = Subscriber.objects.get()
    assert ada.state == "pending" and ada.confirmation_requested_at is not None and ada.confirm_key
    assert ada.confirmation_sent_at is None


def test_an_address_signed_up_during_the_import_is_not_duplicated(admin_client, monkeypatch, worker):
    """Signed up after the batch looked for stored addresses: the unique index refuses the batch, which
    is written again and finds the address stored."""
    Subscriber.objects.create(email="ada@example.org", state="confirmed")
    original, calls = Subscriber.objects.filter, []

    def first_look_up_misses(*args, **kwargs):
        calls.append(kwargs)
        return Subscriber.objects.none() if len(calls) == 1 else original(*args, **kwargs)

    monkeypatch.setattr(Subscriber.objects, "filter", first_look_up_misses)
    page = imported(admin_client, worker, "ada@example.org\nbob@example.org\n", consented=True)
    assert len(calls) >= 2
    assert "Imported 1 new subscriber(s); 1 row(s) already there" in page
    monkeypatch.undo()
    assert Subscriber.objects.get(email="ada@example.org").consent == "form"  # the sign-up's, untouched
    assert Subscriber.objects.get(email="bob@example.org").state == "confirmed"
