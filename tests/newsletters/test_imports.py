"""CSV imports run by a worker (issue 39): the request stores the file and returns, the worker writes
it in batches with its progress, a worker that dies is taken over where it stopped, and the
confirmations an import owes are sent in batches, not as a task per address."""
import datetime
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import connection
from django.urls import reverse
from django.utils import timezone

from newsletters import confirmations, csv_io, imports, tasks
from newsletters.models import Subscriber, SubscriberImport, Subscription, Suppression

pytestmark = pytest.mark.django_db

IMPORT = reverse("admin:newsletters_subscriber_import")
ROOT = Path(__file__).resolve().parents[2]


def addresses(count: int, start: int = 0) -> list[str]:
    return [f"reader{n}@example.org" for n in range(start, start + count)]


def post(client, text: str, consented: bool = False):
    form = {"file": SimpleUploadedFile("people.csv", text.encode(), content_type="text/csv")}
    if consented:
        form["consented"] = "on"
    return client.post(IMPORT, form)


@pytest.fixture
def queued(monkeypatch):
    """What is queued, by task name, instead of being sent to a broker."""
    found: list[tuple[str, tuple]] = []
    for name in ("import_subscribers", "send_confirmations", "send_confirmation"):
        monkeypatch.setattr(getattr(tasks, name), "apply_async",
                            lambda args=(), name=name, **options: found.append((name, tuple(args or ()))))
    return found


class Died(BaseException):
    """A worker killed mid-batch: nothing of it runs on (not an ``Exception``, so no handler records it)."""


@pytest.mark.parametrize("user", ["publisher", "admin_user"])
def test_the_upload_returns_at_once_and_a_worker_imports_it(client, request, queued, django_capture_on_commit_callbacks,
                                                            user):
    client.force_login(request.getfixturevalue(user))
    text = "email,follows\n" + "".join(f"{email},wire\n" for email in addresses(30))
    with django_capture_on_commit_callbacks(execute=True):
        response = post(client, text)
    job = SubscriberImport.objects.get()
    assert response.status_code == 302
    assert response["Location"] == reverse("admin:newsletters_subscriber_import_progress", args=[job.pk])
    assert not Subscriber.objects.exists()  # nothing imported inside the request
    assert queued == [("import_subscribers", (job.pk,))]
    assert (job.state, job.lines_total, bytes(job.data).decode()) == ("queued", 31, text)
    assert job.requested_by == request.getfixturevalue(user)
    page = client.get(response["Location"]).content.decode()
    assert "Queued" in page and "line 0 of 31 (0%)" in page and "reload this page" in page

    tasks.import_subscribers.run(job.pk)
    job.refresh_from_db()
    assert (job.state, job.lines_done, job.created, job.confirmations) == ("done", 31, 30, 30)
    assert bytes(job.data) == b""  # the file is personal data: not kept once imported
    assert Subscriber.objects.count() == 30
    page = client.get(response["Location"]).content.decode()
    assert "Done" in page and "(100%)" in page and "Imported 30 new subscriber(s)" in page
    assert job.filename in client.get(IMPORT).content.decode()  # listed among the latest imports


def test_editors_may_not_import(client, editor):
    client.force_login(editor)
    assert post(client, "ada@example.org\n").status_code == 403
    job = imports.start("ada@example.org\n", "x.csv", False)
    assert client.get(reverse("admin:newsletters_subscriber_import_progress", args=[job.pk])).status_code == 403
    assert not Subscriber.objects.exists()


def test_an_unknown_import_is_a_404(admin_client):
    assert admin_client.get(reverse("admin:newsletters_subscriber_import_progress", args=[999999])).status_code == 404


def test_confirmations_owed_by_an_import_go_out_in_batches_not_a_task_each(settings, smtp_server, queued, monkeypatch):
    """250 new addresses queue no ``send_confirmation``: one ``send_confirmations`` per batch written at
    most, and it sends them NEWSLETTERS_BATCH_SIZE over each SMTP connection, each address once."""
    settings.NEWSLETTERS_BATCH_SIZE = 100
    monkeypatch.setattr(csv_io, "BATCH", 100)
    opened = []
    real_open = confirmations.Connection.__enter__
    monkeypatch.setattr(confirmations.Connection, "__enter__", lambda self: opened.append(1) or real_open(self))
    job = imports.start("".join(f"{email}\n" for email in addresses(250)), "people.csv", False)
    tasks.import_subscribers.run(job.pk)
    assert {name for name, _args in queued} == {"send_confirmations"}  # never a task per address
    assert 1 <= len(queued) <= 3
    assert tasks.send_confirmations.run() == 250
    assert len(opened) == 3  # 100 + 100 + 50, one connection each
    assert sorted(address for item in smtp_server.received for address in item.rcpt_tos) == sorted(addresses(250))
    assert not Subscriber.objects.filter(confirmation_requested_at__isnull=False).exists()  # none owed any more
    assert tasks.send_confirmations.run() == 0


def test_an_address_suppressed_in_another_case_gets_no_confirmation_from_a_batch(settings, smtp_server):
    """A provider reports a bounce as ``Reader0@Example.org``: the batch sender matches it whatever the case,
    as sign-up does (``AddressQuerySet.among``), before the import (skipped) and after it (not mailed)."""
    Suppression.objects.create(email="Reader3@Example.org", reason="bounced")
    imports.run(imports.start("".join(f"{email}\n" for email in addresses(4)), "p.csv", False).pk)
    assert not Subscriber.objects.filter(email="reader3@example.org").exists()
    Suppression.objects.create(email="READER0@example.org", reason="bounced")
    assert confirmations.send_owed() == 2
    assert sorted(address for item in smtp_server.received for address in item.rcpt_tos) == [
        "reader1@example.org", "reader2@example.org"]


def test_a_refused_or_unreachable_confirmation_waits_for_the_sweep(settings, smtp_server):
    settings.NEWSLETTERS_BATCH_SIZE = 10
    smtp_server.refuse["reader1@example.org"] = "451 4.3.0 Try later"
    smtp_server.refuse["reader2@example.org"] = "550 5.1.1 No such user"
    imports.run(imports.start("".join(f"{email}\n" for email in addresses(4)), "p.csv", False).pk)
    assert confirmations.send_owed() == 2
    owed = Subscriber.objects.filter(confirmation_requested_at__isnull=False)
    assert list(owed.values_list("email", flat=True)) == ["reader1@example.org"]  # the 5xx one is owed no more
    assert confirmations.sweep() == 0  # the 4xx one waits under its claim
    past = timezone.now() - datetime.timedelta(seconds=confirmations.CLAIM_SECONDS + 60)
    owed.update(confirmation_requested_at=past, confirmation_sent_at=past)
    assert confirmations.sweep() == 1
    del smtp_server.refuse["reader1@example.org"]
    with socket.socket() as probe:  # a port nothing listens on: the server away
        probe.bind(("127.0.0.1", 0))
        settings.EMAIL_PORT = probe.getsockname()[1]
    assert confirmations.send_owed() == 0 and confirmations.sweep() == 1  # given back at once
    settings.EMAIL_PORT = smtp_server.port
    assert confirmations.send_owed() == 1 and confirmations.sweep() == 0
    assert len(smtp_server.to("reader1@example.org")) == 1


def test_a_worker_dying_mid_import_is_taken_over_where_it_stopped(monkeypatch, queued):
    """Killed in its third batch: the two written stay, the third rolls back; the sweep queues the import
    again once the lease runs out, and the next worker goes on from line 20: every address once, each
    bad line reported once with its number."""
    monkeypatch.setattr(csv_io, "BATCH", 10)
    lines = [f"{email},wire" for email in addresses(45)]
    lines[4], lines[24], lines[44] = "not an address,wire", "reader@example.org,planet:mars", "x@example.org,,weekly"
    job = imports.start("\n".join(lines) + "\n", "people.csv", False)
    real, calls = csv_io.import_batch, []

    def dies_in_the_third(rows, consented):
        calls.append(len(rows))
        report = real(rows, consented)
        if len(calls) == 3:
            raise Died
        return report

    monkeypatch.setattr(csv_io, "import_batch", dies_in_the_third)
    with pytest.raises(Died):
        imports.run(job.pk)
    job.refresh_from_db()
    assert (job.state, job.lines_done, job.created, job.invalid) == ("running", 21, 20, [[5, job.invalid[0][1]]])
    assert Subscriber.objects.count() == 20  # the third batch's transaction never committed
    assert imports.run(job.pk) == "held by another worker, or done"  # its lease still runs
    assert imports.stalled() == []

    SubscriberImport.objects.update(leased_until=timezone.now() - datetime.timedelta(seconds=1))
    assert imports.stalled() == [job.pk]
    tasks.sweep_newsletters.run()
    assert ("import_subscribers", (job.pk,)) in queued
    monkeypatch.setattr(csv_io, "import_batch", real)
    imports.run(job.pk)
    job.refresh_from_db()
    assert (job.state, job.lines_done, job.created, job.existing, job.confirmations) == ("done", 45, 42, 0, 42)
    assert [line for line, _reason in job.invalid] == [5, 25, 45] and job.invalid_count == 3
    assert Subscriber.objects.count() == 42 == Subscription.objects.count()
    assert Subscriber.objects.filter(confirmation_requested_at__isnull=False).count() == 42


def test_a_failing_import_says_why(monkeypatch, admin_client):
    job = imports.start("ada@example.org\n", "people.csv", False)
    monkeypatch.setattr(csv_io, "import_batch", lambda rows, consented: 1 / 0)
    with pytest.raises(ZeroDivisionError):
        imports.run(job.pk)
    job.refresh_from_db()
    assert job.state == "failed" and "ZeroDivisionError" in job.error
    page = admin_client.get(reverse("admin:newsletters_subscriber_import_progress", args=[job.pk])).content.decode()
    assert "The import stopped: ZeroDivisionError" in page


def test_many_bad_lines_are_counted_and_the_first_listed(admin_client):
    job = imports.start("".join(f"bad{n}\n" for n in range(80)) + "ada@example.org\n", "p.csv", True)
    imports.run(job.pk)
    page = admin_client.get(reverse("admin:newsletters_subscriber_import_progress", args=[job.pk])).content.decode()
    assert "Line 1 skipped" in page and "Line 50 skipped" in page and "Line 51 skipped" not in page
    assert "… and 30 more invalid line(s)." in page and "Imported 1 new subscriber(s)" in page


@pytest.mark.skipif(connection.vendor != "postgresql",
                    reason="a second process shares the test database only on PostgreSQL (SQLite's is in memory)")
@pytest.mark.django_db(transaction=True)
def test_a_worker_killed_with_sigkill_loses_nothing_and_duplicates_no_one(monkeypatch, tmp_path):
    """A real worker process imports 3,000 addresses in batches of 100, slowed so that it is mid-file, and
    is killed with SIGKILL; another takes over once the lease runs out. Every address is stored once and
    owed one confirmation, and the counts add up to the file."""
    total = 3000
    job = imports.start("".join(f"{email},wire\n" for email in addresses(total)), "people.csv", False)
    script = (
        "import time, django; django.setup()\n"
        "from newsletters import csv_io, imports\n"
        "csv_io.BATCH = 100\n"
        "real = csv_io.import_batch\n"
        "def slow(rows, consented):\n"
        "    time.sleep(0.1)\n"
        "    return real(rows, consented)\n"
        "csv_io.import_batch = slow\n"
        f"imports.run({job.pk})\n"
    )
    db = connection.settings_dict
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "repojournal.settings.test",
           "DATABASE_URL": f"postgres://{db['USER']}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}/{db['NAME']}"}
    worker = subprocess.Popen([sys.executable, "-c", script], cwd=ROOT, env=env)
    try:
        deadline = time.monotonic() + 60
        while SubscriberImport.objects.get(pk=job.pk).lines_done < 500:
            assert worker.poll() is None and time.monotonic() < deadline, "the worker did not get going"
            time.sleep(0.05)
        os.kill(worker.pid, signal.SIGKILL)
    finally:
        worker.wait(timeout=10)
    killed = SubscriberImport.objects.get(pk=job.pk)
    assert killed.state == "running" and 500 <= killed.lines_done < total, killed.lines_done
    assert Subscriber.objects.count() == killed.created == killed.lines_done  # exactly what it recorded

    SubscriberImport.objects.filter(pk=job.pk).update(leased_until=timezone.now() - datetime.timedelta(seconds=1))
    assert imports.stalled() == [job.pk]
    imports.run(job.pk)
    done = SubscriberImport.objects.get(pk=job.pk)
    assert (done.state, done.created, done.existing, done.confirmations, done.invalid_count) == (
        "done", total, 0, total, 0)
    assert Subscriber.objects.count() == total == Subscription.objects.count()
    assert set(Subscriber.objects.values_list("email", flat=True)) == set(addresses(total))
    assert Subscriber.objects.filter(confirmation_requested_at__isnull=False).count() == total
