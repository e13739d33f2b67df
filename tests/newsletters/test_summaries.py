"""Daily summaries: held deliveries due sent as one email per subscriber."""
import datetime

import pytest
from django.utils import timezone

from blog.factories import PostFactory
from digests.factories import DigestFactory
from newsletters import batches, fanout, sending, summaries
from newsletters.models import Delivery

from .delivery_factories import subscriber

pytestmark = pytest.mark.django_db


def held_items(*addresses):
    for address in addresses:
        subscriber(address, ("wire", ""), ("blog", ""), cadence="daily", daily_at="07:30")
    digest, post = DigestFactory(headline="Digest of the day"), PostFactory(title="A post of the day")
    fanout.mail_published()
    assert set(Delivery.objects.values_list("state", flat=True)) == {Delivery.State.HELD}
    return digest, post


def test_a_daily_summary_groups_two_items_into_one_email(smtp_server):
    digest, post = held_items("daily@example.com", "other@example.com")
    assert sending.send_due() == 0 and summaries.send_due() == 0  # not before its time
    Delivery.objects.update(due_at=timezone.now(), next_attempt_at=timezone.now())
    assert "summaries sent 2" in sending.sweep()
    [email] = smtp_server.to("daily@example.com")
    html = email.get_body(("html",)).get_content()
    assert "Digest of the day" in html and "A post of the day" in html
    assert digest.get_absolute_url() in html and post.get_absolute_url() in html
    assert email["List-Unsubscribe-Post"] == "List-Unsubscribe=One-Click" and email["Message-ID"].startswith("<summary.")
    assert "A post of the day" in email.get_body(("plain",)).get_content()
    assert set(Delivery.objects.values_list("state", flat=True)) == {Delivery.State.SENT}
    assert len(smtp_server.messages) == 2
    assert summaries.send_due() == 0


def test_a_summary_lease_that_runs_out_goes_back_to_held(smtp_server):
    held_items("daily@example.com")
    Delivery.objects.update(due_at=timezone.now(), next_attempt_at=timezone.now())
    assert len(batches.claim(summaries.due(), 10)) == 2  # the worker died holding them
    Delivery.objects.update(leased_until=timezone.now() - datetime.timedelta(seconds=1))
    sending.sweep()  # hands them back as held, then sends the summary
    assert len(smtp_server.to("daily@example.com")) == 1
    assert set(Delivery.objects.values_list("state", flat=True)) == {Delivery.State.SENT}


def test_a_summary_refused_for_now_is_held_again(smtp_server):
    smtp_server.refuse["daily@example.com"] = "452 4.2.2 Mailbox full"
    held_items("daily@example.com")
    Delivery.objects.update(due_at=timezone.now(), next_attempt_at=timezone.now())
    summaries.send_due()
    assert all(row.state == Delivery.State.HELD and row.next_attempt_at > timezone.now()
               for row in Delivery.objects.all())
