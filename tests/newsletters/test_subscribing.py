"""Signing up and confirming (issue 27): double opt-in through a real SMTP server, no enumeration,
a honeypot, rate limits, precise 400s, and the owed confirmation sent once even across failures."""
import datetime
import re

import pytest
from django.core import signing
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from blog.factories import PostFactory
from newsletters import confirmations, links, subscribing, tasks
from newsletters.models import Subscriber, Subscription, Suppression
from publishing.workflow import Status

pytestmark = pytest.mark.django_db

SUBSCRIBE = "/newsletters/subscribe/"
LINK = re.compile(r"https?://\S+/newsletters/confirm/[^/\s\"<]+/")


@pytest.fixture
def worker(monkeypatch, django_capture_on_commit_callbacks):
    """A stand-in for the Celery worker: queuing ``send_confirmation`` runs the domain code at once,
    and ``worker.post(...)`` posts and runs what was queued on commit."""

    class Worker:
        def __init__(self):
            self.queued: list[int] = []

        def post(self, client, data, **extra):
            with django_capture_on_commit_callbacks(execute=True):
                return client.post(SUBSCRIBE, data, **extra)

    worker = Worker()
    def run(args, **options):
        worker.queued.append(args[0])
        confirmations.send(*args)

    monkeypatch.setattr(tasks.send_confirmation, "apply_async", run)
    return worker


@pytest.fixture
def tagged(db):
    return PostFactory(tags=["cuda"])


def form_fields(html: str) -> dict:
    """The sign-up form's fields with their preset values, as a browser would post them."""
    form = re.search(r'<form class="subscribe"[^>]*>(.*?)</form>', html, re.S)[1]
    fields = {"follow": re.search(r'name="follow" value="([^"]+)"', form)[1], "website": ""}
    fields["cadence"] = re.search(r'<option value="(\w+)" selected>', form[form.index('name="cadence"'):])[1]
    return fields


def confirm_link(message) -> str:
    text = message.get_body(("plain",)).get_content()
    html = message.get_body(("html",)).get_content()
    found = LINK.search(text)[0]
    assert found in html
    return found.split("://", 1)[1].split("/", 1)[1].join(["/", ""])


def test_sign_up_from_a_tag_page_confirm_once(client, worker, smtp_server, tagged):
    page = client.get("/tags/cuda/")
    data = {**form_fields(page.content.decode()), "email": "Reader@Example.ORG"}
    assert data["follow"] == "tag:cuda"
    answer = worker.post(client, data)
    assert answer.status_code == 200 and b"Check your inbox" in answer.content
    subscriber = Subscriber.objects.get()
    assert (subscriber.email, subscriber.state) == ("Reader@example.org", Subscriber.State.PENDING)  # domain normalised
    [message] = smtp_server.to("Reader@example.org")
    assert len(smtp_server.messages) == 1
    assert message["Subject"] == "Confirm your subscription to RepoJournal"
    assert "posts tagged cuda" in message.get_body(("plain",)).get_content()
    url = confirm_link(message)

    shown = client.get(url)
    assert shown.status_code == 200 and b"<button" in shown.content and b'method="post"' in shown.content
    subscriber.refresh_from_db()
    assert subscriber.state == Subscriber.State.PENDING  # a link scanner's GET confirms nothing
    assert "no-store" in shown["Cache-Control"] and shown["Referrer-Policy"] == "no-referrer"

    confirmed = client.post(url)
    assert confirmed.status_code == 200 and links.manage_url(Subscriber.objects.get()).encode() in confirmed.content
    subscriber.refresh_from_db()
    follow = subscriber.subscriptions.get()
    assert subscriber.state == Subscriber.State.CONFIRMED and subscriber.confirmed_at and follow.confirmed_at
    assert (follow.kind, follow.target, follow.cadence) == ("tag", "cuda", "immediate")
    assert subscriber.confirmation_requested_at is None and subscriber.confirmation_sent_at is not None

    again = client.post(url)
    assert again.status_code == 410 and b"already used" in again.content
    assert len(smtp_server.messages) == 1


def test_an_expired_or_forged_link_is_refused(client, worker, monkeypatch, tagged):
    worker.post(client, {"email": "late@example.org", "follow": "wire"})
    subscriber = Subscriber.objects.get()
    real_time = signing.time.time
    monkeypatch.setattr(signing.time, "time", lambda: real_time() - 49 * 3600)
    old = links.confirm_token(subscriber)
    monkeypatch.setattr(signing.time, "time", real_time)
    expired = client.post(f"/newsletters/confirm/{old}/")
    assert expired.status_code == 410 and b"expired" in expired.content
    forged = client.get("/newsletters/confirm/WzEsImFiYyJd:1tXyZ:forged/")
    assert forged.status_code == 400 and b"not one of ours" in forged.content
    subscriber.refresh_from_db()
    assert subscriber.state == Subscriber.State.PENDING


def test_the_answer_does_not_tell_whether_an_address_is_subscribed(client, worker, settings, tagged):
    settings.NEWSLETTERS_RATE_PER_ADDRESS = "100/h"
    new = worker.post(client, {"email": "new@example.org", "follow": "wire"})
    pending = worker.post(client, {"email": "new@example.org", "follow": "wire"})
    subscribing_confirmed = Subscriber.objects.create(email="old@example.org", state=Subscriber.State.CONFIRMED)
    Subscription.objects.create(subscriber=subscribing_confirmed, kind="wire", confirmed_at=timezone.now())
    confirmed = worker.post(client, {"email": "old@example.org", "follow": "wire"})
    Subscriber.objects.create(email="gone@example.org", state=Subscriber.State.UNSUBSCRIBED)
    unsubscribed = worker.post(client, {"email": "gone@example.org", "follow": "wire"})
    Suppression.objects.create(email="bounced@example.org", reason="bounced")
    suppressed = worker.post(client, {"email": "bounced@example.org", "follow": "wire"})
    answers = {(r.status_code, r.content) for r in (new, pending, confirmed, unsubscribed, suppressed)}
    assert len(answers) == 1 and answers.pop()[0] == 200
    assert Subscriber.objects.get(email="gone@example.org").state == Subscriber.State.PENDING
    assert not Subscriber.objects.filter(email="bounced@example.org").exists()


def test_a_confirmed_subscriber_confirms_a_new_follow_from_the_inbox(client, worker, smtp_server, tagged):
    reader = Subscriber.objects.create(email="fan@example.org", state=Subscriber.State.CONFIRMED, confirm_key="",
                                       confirmed_at=timezone.now())
    wire = Subscription.objects.create(subscriber=reader, kind="wire", confirmed_at=timezone.now())
    worker.post(client, {"email": "FAN@example.org", "follow": "tag:cuda", "cadence": "daily", "daily_at": "07:30"})
    added = reader.subscriptions.get(kind="tag")
    assert added.confirmed_at is None and (added.cadence, added.daily_at) == ("daily", datetime.time(7, 30))
    [message] = smtp_server.to("fan@example.org")
    body = message.get_body(("plain",)).get_content()
    assert "posts tagged cuda" in body and "The Wire" not in body  # only what awaits confirmation
    client.post(confirm_link(message))
    added.refresh_from_db()
    wire.refresh_from_db()
    assert added.confirmed_at is not None and wire.confirmed_at is not None

    worker.post(client, {"email": "fan@example.org", "follow": "tag:cuda", "cadence": "immediate"})
    added.refresh_from_db()
    assert added.cadence == "daily" and len(smtp_server.messages) == 1  # already followed: left as it is, nothing sent


def test_the_honeypot_stores_and_sends_nothing(client, worker, smtp_server, tagged):
    real = worker.post(client, {"email": "person@example.org", "follow": "wire"})
    trapped = worker.post(client, {"email": "bot@example.org", "follow": "wire", "website": "http://spam.example"})
    assert (trapped.status_code, trapped.content) == (real.status_code, real.content)
    assert not Subscriber.objects.filter(email="bot@example.org").exists()
    assert smtp_server.to("bot@example.org") == [] and len(smtp_server.messages) == 1


def test_rate_limits_per_address_and_per_client(client, worker, smtp_server, settings, tagged):
    settings.NEWSLETTERS_RATE_PER_ADDRESS = "2/h"
    settings.NEWSLETTERS_RATE_PER_CLIENT = "4/h"
    answers = [worker.post(client, {"email": email, "follow": "wire"}, REMOTE_ADDR="198.51.100.7")
               for email in ("same@example.org", "SAME@example.org", "same@EXAMPLE.org")]
    assert len({(a.status_code, a.content) for a in answers}) == 1  # the third looks the same...
    assert len(smtp_server.to("same@example.org")) + len(smtp_server.to("SAME@example.org")) == 2  # ...and sends nothing
    fourth = worker.post(client, {"email": "other@example.org", "follow": "wire"}, REMOTE_ADDR="198.51.100.7")
    assert fourth.status_code == 200
    refused = worker.post(client, {"email": "third@example.org", "follow": "wire"}, REMOTE_ADDR="198.51.100.7")
    assert refused.status_code == 429 and not Subscriber.objects.filter(email="third@example.org").exists()
    elsewhere = worker.post(client, {"email": "third@example.org", "follow": "wire"}, REMOTE_ADDR="198.51.100.8")
    assert elsewhere.status_code == 200


@pytest.mark.parametrize(("data", "problem"), [
    ({"email": "not-an-address", "follow": "wire"}, b"This email address is not valid: An email address must have an @-sign."),
    ({"email": "a@b@example.org", "follow": "wire"}, b"The part after the @-sign contains invalid characters"),
    ({"email": "", "follow": "wire"}, b"This field is required."),
    ({"email": "ok@example.org", "follow": "tag:no-such-tag"}, "There is no tag “no-such-tag” to follow.".encode()),
    ({"email": "ok@example.org", "follow": "tag:secret"}, "There is no tag “secret” to follow.".encode()),
    ({"email": "ok@example.org", "follow": "topic:"}, "There is no topic “” to follow.".encode()),
    ({"email": "ok@example.org", "follow": "planet:mars"}, b"Choose what to follow"),
    ({"email": "ok@example.org", "follow": "wire:extra"}, "“wire” takes no target.".encode()),
    ({"email": "ok@example.org", "follow": "wire", "cadence": "hourly"}, b"Select a valid choice"),
])
def test_bad_input_is_a_400_naming_the_problem(client, worker, smtp_server, tagged, data, problem):
    PostFactory(tags=["secret"], status=Status.DRAFT, published_at=None)  # a draft's tag cannot be followed
    answer = worker.post(client, data)
    assert answer.status_code == 400 and problem in answer.content
    assert b'<form class="subscribe"' in answer.content
    assert not Subscriber.objects.exists() and smtp_server.messages == []


def test_an_smtp_failure_is_retried_by_the_sweep(client, worker, smtp_server, tagged):
    smtp_server.refuse["retry@example.org"] = "451 4.3.0 Try again later"
    worker.post(client, {"email": "retry@example.org", "follow": "wire"})
    subscriber = Subscriber.objects.get()
    assert subscriber.confirmation_requested_at and subscriber.confirmation_sent_at is None  # claim given back
    assert confirmations.sweep() == 0  # too recent: the task queued with it is the one to send it
    del smtp_server.refuse["retry@example.org"]
    Subscriber.objects.update(confirmation_requested_at=timezone.now() - datetime.timedelta(minutes=2))
    assert confirmations.sweep() == 1
    assert confirmations.send_owed() == 1  # what the task the sweep queues does
    assert len(smtp_server.to("retry@example.org")) == 1
    assert confirmations.sweep() == 0  # sent: no longer owed


def test_a_permanent_refusal_ends_the_debt(client, worker, smtp_server, tagged):
    smtp_server.refuse["nobody@example.org"] = "550 5.1.1 No such user"
    answer = worker.post(client, {"email": "nobody@example.org", "follow": "wire"})
    assert answer.status_code == 200 and worker.queued
    subscriber = Subscriber.objects.get()
    assert subscriber.confirmation_requested_at is None and subscriber.confirmation_sent_at is None
    assert confirmations.sweep() == 0 and smtp_server.messages == []


def test_a_live_claim_is_sent_by_its_holder_only(client, worker, smtp_server, tagged, monkeypatch):
    monkeypatch.setattr(tasks.send_confirmation, "apply_async", lambda args, **options: None)  # the task is lost
    worker.post(client, {"email": "once@example.org", "follow": "wire"})
    subscriber = Subscriber.objects.get()
    now = timezone.now()
    Subscriber.objects.update(confirmation_requested_at=now - datetime.timedelta(minutes=5),
                              confirmation_sent_at=now - datetime.timedelta(seconds=10))  # another worker holds it
    assert confirmations.send(subscriber.pk) is False and confirmations.sweep() == 0
    Subscriber.objects.update(confirmation_sent_at=now - datetime.timedelta(seconds=confirmations.CLAIM_SECONDS + 1))
    assert confirmations.send(subscriber.pk) is True  # its holder died: the claim expired
    assert confirmations.send(subscriber.pk) is False
    assert len(smtp_server.to("once@example.org")) == 1


def test_the_sign_up_page_is_never_cached(client, tagged):
    page = client.get(SUBSCRIBE + "?follow=tag:cuda")
    assert page.status_code == 200 and b'name="follow" value="tag:cuda"' in page.content
    assert "no-store" in page["Cache-Control"] and "private" in page["Cache-Control"]
    assert client.put(SUBSCRIBE).status_code == 405


def plan(sql: str) -> str:
    explain = "EXPLAIN " if connection.vendor == "postgresql" else "EXPLAIN QUERY PLAN "
    with connection.cursor() as cursor:
        cursor.execute(explain + sql)
        return "\n".join(" ".join(str(cell) for cell in row) for row in cursor.fetchall())


def test_sign_up_finds_the_address_through_an_index_not_a_scan(db):
    """Each look-up of an address a sign-up makes (is it suppressed? is it stored, any case?) is read
    through the Lower("email") indexes: PostgreSQL's EXPLAIN (after ANALYZE, with 5,000 subscribers)
    and SQLite's EXPLAIN QUERY PLAN name them. ``email__iexact`` was a sequential scan on both."""
    Subscriber.objects.bulk_create(Subscriber(email=f"reader{n}@example.org") for n in range(5000))
    Suppression.objects.bulk_create(Suppression(email=f"gone{n}@example.org", reason="bounced") for n in range(2000))
    Subscriber.objects.create(email="Ada@example.org")
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE newsletters_subscriber" if connection.vendor == "postgresql" else "ANALYZE")
        if connection.vendor == "postgresql":
            cursor.execute("ANALYZE newsletters_suppression")
    with CaptureQueriesContext(connection) as captured:
        found = subscribing.subscribe("ada@EXAMPLE.org", "wire", "", "immediate", datetime.time(8))
    assert found.email == "Ada@example.org"  # found whatever its case: no second subscriber
    tables = {"newsletters_subscriber": "newsletters_subscriber_lower",
              "newsletters_suppression": "newsletters_suppression_lower"}
    look_ups = [(query["sql"], index) for query in captured for table, index in tables.items()
                if query["sql"].startswith("SELECT") and f'FROM "{table}" WHERE' in query["sql"]]
    assert sorted(index for _sql, index in look_ups) == sorted(tables.values()), look_ups  # one of each
    for sql, index in look_ups:
        shown = plan(sql)
        assert index in shown and "Seq Scan" not in shown, (sql, shown)
