"""Sending: what the SMTP server receives, retries, outages and workers killed mid-batch."""
import datetime
import re

import pytest
from aiosmtpd.controller import Controller
from django.test import Client
from django.utils import timezone

from digests.factories import ActionItemFactory, DigestFactory, DigestReferenceFactory, FAQEntryFactory, TopicFactory
from digests.models import Digest
from newsletters import batches, fanout, sending
from newsletters.models import Delivery, Subscriber, Suppression

from .delivery_factories import subscriber

pytestmark = pytest.mark.django_db
SITE = "https://news.example"


@pytest.fixture(autouse=True)
def site(settings):
    settings.SITE_URL = SITE
    settings.NEWSLETTERS_MESSAGE_ID_DOMAIN = "mail.news.example"


def digest_with_parts():
    digest = DigestFactory(topic=TopicFactory(slug="rust"), headline="Rust ships a thing",
                           summary="The compiler got faster [1].", body="More [1] in [the docs](/wire/).")
    cited = DigestReferenceFactory(digest=digest, number=1, reference__title="Speed up codegen")
    ActionItemFactory(digest=digest, text="Upgrade the toolchain", repository=cited.reference.repository)
    FAQEntryFactory(digest=digest, question="Is it faster?", answer="Yes [1].")
    Digest.objects.filter(pk=digest.pk).refresh_rendered()
    return digest, cited.reference


def mail_to(*addresses, follows=(("wire", ""),)):
    people = [subscriber(address, *follows) for address in addresses]
    digest, reference = digest_with_parts()
    fanout.mail_published()
    return people, digest, reference


def test_the_received_email_has_both_parts_headers_and_absolute_links(smtp_server):
    [reader], digest, reference = mail_to("reader@example.com")
    assert sending.send_due() == 1
    [email] = smtp_server.to("reader@example.com")
    assert email["Subject"] == "Rust ships a thing"
    assert email["Message-ID"] == f"<digest.{digest.pk}.{reader.pk}@mail.news.example>"
    unsubscribe = re.fullmatch(r"<(https://news\.example/newsletters/unsubscribe/[^>]+/)>", email["List-Unsubscribe"])
    assert unsubscribe and email["List-Unsubscribe-Post"] == "List-Unsubscribe=One-Click"
    assert "news.example" in email["List-Id"]
    html = email.get_body(("html",)).get_content()
    text = email.get_body(("plain",)).get_content()
    for shown in ("Rust ships a thing", "Upgrade the toolchain", "Speed up codegen", "Is it faster?"):
        assert shown in html and shown in text
    assert f'href="{reference.url}"' in html  # the citation [1] links to its reference
    assert 'href="https://news.example/wire/"' in html and "<style" not in html and 'style="' in html
    hrefs = re.findall(r'(?:href|src)="([^"]*)"', html)
    assert hrefs and all(href.startswith(("https://", "mailto:")) for href in hrefs)
    assert not [href for href in hrefs if not href.startswith((SITE, "https://github.com/"))]  # no tracking hosts
    assert unsubscribe.group(1) in text and f"{SITE}{digest.get_absolute_url()}" in text
    path = unsubscribe.group(1).removeprefix(SITE)
    response = Client(enforce_csrf_checks=True).post(path, {"List-Unsubscribe": "One-Click"})
    assert response.status_code in (200, 204, 302)
    reader.refresh_from_db()
    assert reader.state == Subscriber.State.UNSUBSCRIBED


def test_the_manage_link_opens_the_subscribers_page(smtp_server, client):
    mail_to("reader@example.com")
    sending.send_due()
    [email] = smtp_server.messages
    manage = re.search(r'href="https://news\.example(/newsletters/manage/[^"]+/)"', email.get_body(("html",)).get_content())
    assert client.get(manage.group(1)).status_code == 200


def test_a_temporary_refusal_is_retried_later_and_a_permanent_one_fails(smtp_server):
    smtp_server.refuse["later@example.com"] = "451 4.3.0 Try again later"
    smtp_server.refuse["never@example.com"] = "550 5.1.1 No such user"
    mail_to("later@example.com", "never@example.com", "fine@example.com")
    assert sending.send_due() == 1
    later = Delivery.objects.get(email="later@example.com")
    assert later.state == Delivery.State.QUEUED and later.next_attempt_at > timezone.now()
    assert later.attempts == 1 and "451" in later.last_error
    never = Delivery.objects.get(email="never@example.com")
    assert never.state == Delivery.State.FAILED and "550" in never.last_error
    del smtp_server.refuse["later@example.com"]
    assert sending.send_due() == 0  # not before its backoff
    Delivery.objects.filter(pk=later.pk).update(next_attempt_at=timezone.now())
    assert sending.send_due() == 1
    assert len(smtp_server.to("later@example.com")) == 1


def test_attempts_run_out(smtp_server, settings):
    settings.NEWSLETTERS_MAX_ATTEMPTS = 2
    smtp_server.refuse["later@example.com"] = "451 4.3.0 Try again later"
    mail_to("later@example.com")
    sending.send_due()
    Delivery.objects.update(next_attempt_at=timezone.now())
    sending.send_due()
    assert Delivery.objects.get().state == Delivery.State.FAILED


def test_the_server_away_loses_no_recipient(smtp_server, settings):
    settings.NEWSLETTERS_BATCH_SIZE = 2
    mail_to(*(f"reader{number}@example.com" for number in range(5)))
    smtp_server.stop()
    assert sending.send_due() == 0
    assert set(Delivery.objects.values_list("state", flat=True)) == {Delivery.State.QUEUED}
    given_back = Delivery.objects.exclude(last_error="")
    assert given_back.count() == 2  # one batch tried, then it stopped: the server is not hammered
    assert all(row.next_attempt_at > timezone.now() for row in given_back)
    assert set(Delivery.objects.values_list("attempts", flat=True)) == {0}  # none was tried
    smtp_server.controller = Controller(smtp_server.handler, hostname="127.0.0.1", port=smtp_server.port)
    smtp_server.start()  # back, on the same port (a stopped controller's loop cannot restart)
    Delivery.objects.update(next_attempt_at=timezone.now())  # the backoff passed
    assert sending.send_due() == 5
    assert sorted(address for item in smtp_server.received for address in item.rcpt_tos) == sorted(
        f"reader{number}@example.com" for number in range(5))


def test_a_batch_held_by_a_killed_worker_is_sent_once_after_its_lease(smtp_server, settings):
    settings.NEWSLETTERS_BATCH_SIZE = 3
    mail_to(*(f"reader{number}@example.com" for number in range(3)))
    claimed = batches.claim(sending.due(), 3)  # ... and the worker died before sending
    assert len(claimed) == 3 and set(Delivery.objects.values_list("state", flat=True)) == {Delivery.State.SENDING}
    assert sending.send_due() == 0 and not smtp_server.messages  # still leased: nobody else sends them
    sending.sweep()
    assert set(Delivery.objects.values_list("state", flat=True)) == {Delivery.State.SENDING}
    Delivery.objects.update(leased_until=timezone.now() - datetime.timedelta(seconds=1))
    assert "leases handed back 3" in sending.sweep()
    sending.send_due()  # (the sweep queued it too: inline, it already ran)
    assert sorted(len(smtp_server.to(f"reader{number}@example.com")) for number in range(3)) == [1, 1, 1]
    assert set(Delivery.objects.values_list("state", flat=True)) == {Delivery.State.SENT}


def test_an_address_suppressed_or_unsubscribed_after_the_fan_out_is_skipped(smtp_server):
    [bounced, gone, reader], _, _ = mail_to("bounced@example.com", "gone@example.com", "reader@example.com")
    Suppression.objects.create(email="BOUNCED@example.com", reason=Suppression.Reason.BOUNCED)  # any case
    Subscriber.objects.filter(pk=gone.pk).update(state=Subscriber.State.UNSUBSCRIBED)
    assert sending.send_due() == 1
    assert [item.rcpt_tos for item in smtp_server.received] == [["reader@example.com"]]
    assert Delivery.objects.filter(state=Delivery.State.SUPPRESSED).count() == 2


def test_every_recipient_gets_their_own_links_and_message_id(smtp_server):
    people, digest, _ = mail_to("a@example.com", "b@example.com")
    sending.send_due()
    ids = {email["Message-ID"] for email in smtp_server.messages}
    links = {email["List-Unsubscribe"] for email in smtp_server.messages}
    assert len(ids) == 2 and len(links) == 2
    assert {Delivery.objects.get(subscriber=person).smtp_id for person in people} == ids


def test_publishing_mails_followers_through_the_tasks(smtp_server, django_capture_on_commit_callbacks):
    from repojournal.celery import app

    if not app.conf.task_always_eager:
        pytest.skip("tasks go to a real broker here; the domain functions are tested directly above")
    subscriber("reader@example.com", ("wire", ""))
    with django_capture_on_commit_callbacks(execute=True):
        digest_with_parts()  # its save queues mail_published on commit, which queues send_message
    assert len(smtp_server.to("reader@example.com")) == 1


def test_owed_names_messages_with_due_deliveries_whose_task_does_not_wait(smtp_server):
    mail_to("reader@example.com")
    [message_id] = Delivery.objects.values_list("message_id", flat=True)
    assert sending.owed(set()) == [message_id]
    assert sending.owed({str(message_id)}) == []  # its task still waits in the broker
    sending.send_due()
    assert sending.owed(set()) == []


def test_another_backend_gets_the_same_email_as_a_django_message(mailoutbox, settings):
    """Not SMTP (here the test outbox; in production anymail's providers): one EmailMultiAlternatives each."""
    settings.EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
    [reader], digest, _ = mail_to("reader@example.com")
    assert sending.send_due() == 1
    [email] = mailoutbox
    assert email.to == ["reader@example.com"] and email.subject == "Rust ships a thing"
    assert email.extra_headers["Message-ID"] == f"<digest.{digest.pk}.{reader.pk}@mail.news.example>"
    assert email.extra_headers["List-Unsubscribe"].startswith("<https://news.example/newsletters/unsubscribe/")
    assert "Upgrade the toolchain" in email.alternatives[0][0] and "Upgrade the toolchain" in email.body
