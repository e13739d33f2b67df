"""Bounces and complaints from a provider's tracking webhook (Postmark, through django-anymail)."""
import base64
import json

import pytest

from digests.factories import DigestFactory
from newsletters import fanout, sending
from newsletters.models import Delivery, Suppression

from .delivery_factories import subscriber

pytestmark = pytest.mark.django_db
URL = "/newsletters/anymail/postmark/tracking/"

#: Postmark's bounce webhook example (postmarkapp.com/developer/webhooks/bounce-webhook).
BOUNCE = {
    "RecordType": "Bounce", "MessageStream": "outbound", "ID": 4323372036854775807, "Type": "HardBounce",
    "TypeCode": 1, "Name": "Hard bounce", "Tag": "Test", "MessageID": "883953f4-6105-42a2-a16a-77a8eac79483",
    "Metadata": {"a_key": "a_value"}, "ServerID": 23,
    "Description": "The server was unable to deliver your message (ex: unknown user, mailbox not found).",
    "Details": "Test bounce details", "Email": "john@Example.COM", "From": "sender@example.com",
    "BouncedAt": "2019-11-05T16:33:54.9070259Z", "DumpAvailable": True, "Inactive": True, "CanActivate": True,
    "Subject": "Test subject", "Content": "<Full dump of bounce>",
}
#: Postmark's spam complaint webhook example (postmarkapp.com/developer/webhooks/spam-complaint-webhook).
COMPLAINT = {
    "RecordType": "SpamComplaint", "MessageStream": "outbound", "ID": 42, "Type": "SpamComplaint",
    "TypeCode": 512, "Name": "Spam complaint", "Tag": "Test", "MessageID": "00000000-0000-0000-0000-000000000000",
    "Metadata": {"a_key": "a_value"}, "ServerID": 1234, "Description": "", "Details": "Test spam complaint details",
    "Email": "grumpy@example.com", "From": "sender@example.com", "BouncedAt": "2019-11-05T16:33:54.9070259Z",
    "DumpAvailable": True, "Inactive": True, "CanActivate": False, "Subject": "Test subject",
    "Content": "<Abuse report dump>",
}


@pytest.fixture(autouse=True)
def webhook_secret(settings):
    settings.ANYMAIL = {"WEBHOOK_SECRET": "hook:s3cret"}


def post(client, payload, secret="hook:s3cret"):
    auth = "Basic " + base64.b64encode(secret.encode()).decode()
    return client.post(URL, json.dumps(payload), content_type="application/json", HTTP_AUTHORIZATION=auth)


def test_a_hard_bounce_suppresses_the_address_and_a_later_fan_out_skips_it(client, smtp_server):
    subscriber("john@example.com", ("wire", ""))
    subscriber("reader@example.com", ("wire", ""))
    DigestFactory()
    fanout.mail_published()
    sending.send_due()
    assert post(client, BOUNCE).status_code == 200
    suppression = Suppression.objects.get()
    assert suppression.email == "john@example.com" and suppression.reason == Suppression.Reason.BOUNCED
    assert Delivery.objects.get(email="john@example.com").state == Delivery.State.BOUNCED
    DigestFactory()  # the next item
    fanout.mail_published()
    sending.send_due()
    assert len(smtp_server.to("john@example.com")) == 1 and len(smtp_server.to("reader@example.com")) == 2


def test_a_spam_complaint_suppresses(client):
    assert post(client, COMPLAINT).status_code == 200
    assert Suppression.objects.get().reason == Suppression.Reason.COMPLAINED


def test_a_soft_bounce_changes_nothing(client):
    assert post(client, {**BOUNCE, "Type": "SoftBounce", "TypeCode": 4096}).status_code == 200
    assert post(client, {**BOUNCE, "Type": "Transient", "TypeCode": 2}).status_code == 200
    assert not Suppression.objects.exists()


def test_a_webhook_without_the_secret_is_refused(client):
    assert post(client, BOUNCE, secret="hook:wrong").status_code == 400
    assert not Suppression.objects.exists()
