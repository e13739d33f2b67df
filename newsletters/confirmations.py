"""Confirmation emails (double opt-in), owed in the database and sent once.

``request()`` records that an email is owed (``confirmation_requested_at``) in the sign-up's own
transaction and queues ``send_confirmation`` once it commits. ``send()`` claims the owed email with
a conditional UPDATE — ``confirmation_sent_at`` set to the claim's time, only where no live claim
is — so of two workers given the same subscriber, one sends. A sent email clears the debt; an SMTP
failure gives the claim back, and a claim whose worker died expires after ``CLAIM_SECONDS``. The beat
``sweep()`` queues again whatever is still owed, so a lost task or a Redis restart loses no email.

Queuing goes through the ``confirmation_owed`` signal (connected in ``newsletters.signals``, which
queues the task): ``tasks`` imports this module, so this module must not import ``tasks``.

Exactly once? Not across a kill: a worker killed after the SMTP server accepted the email and before
the debt was cleared leaves a claim that expires, and the sweep sends the email again — at most
one duplicate per kill, ``CLAIM_SECONDS`` later. A confirmation sent twice confirms once (the
link's key is emptied when used), so the duplicate costs the reader one more email.
"""
import datetime
import logging
import smtplib

from django.conf import settings
from django.core.mail import EmailMultiAlternatives
from django.db import transaction
from django.db.models import Q
from django.dispatch import Signal
from django.template.loader import render_to_string
from django.utils import timezone

from . import links
from .forms import describe
from .models import Subscriber, Suppression, new_key

logger = logging.getLogger(__name__)

SUBJECT = "Confirm your subscription to RepoJournal"
#: How long a worker holds an owed email before the sweep may give it to another.
CLAIM_SECONDS = 300
#: A request younger than this is left to the task queued with it; the sweep takes the older ones.
SWEEP_GRACE = datetime.timedelta(minutes=1)
#: Sent with ``subscriber_id`` when a confirmation is owed and committed: its receiver queues ``send_confirmation``.
confirmation_owed = Signal()


def request(subscriber: Subscriber) -> None:
    """Owe `subscriber` a confirmation email; call inside the transaction that signs them up."""
    if not subscriber.confirm_key:  # confirmed before: a fresh single-use key for this confirmation
        subscriber.confirm_key = new_key()
    subscriber.confirmation_requested_at = timezone.now()
    subscriber.confirmation_sent_at = None
    subscriber.save(update_fields=["confirm_key", "confirmation_requested_at", "confirmation_sent_at"])
    pk = subscriber.pk
    transaction.on_commit(lambda: confirmation_owed.send(sender=Subscriber, subscriber_id=pk))


def _owed(now) -> Q:
    """Owed, not expired, and not held by a live claim."""
    live_claim = Q(confirmation_sent_at__gte=now - datetime.timedelta(seconds=CLAIM_SECONDS))
    expired = now - datetime.timedelta(hours=settings.NEWSLETTERS_CONFIRM_HOURS)
    return Q(confirmation_requested_at__gt=expired) & ~live_claim


def send(subscriber_id: int) -> bool:
    """Send the confirmation owed to `subscriber_id`, if it is still owed and no one else holds it."""
    now = timezone.now()
    owed = Subscriber.objects.filter(_owed(now), pk=subscriber_id)
    if not owed.update(confirmation_sent_at=now):
        return False
    subscriber = Subscriber.objects.get(pk=subscriber_id)
    claimed = Subscriber.objects.filter(pk=subscriber_id, confirmation_requested_at=subscriber.confirmation_requested_at,
                                        confirmation_sent_at=now)
    pending = list(subscriber.subscriptions.filter(confirmed_at__isnull=True).order_by("created_at"))
    if not pending or Suppression.objects.for_address(subscriber.email).exists():
        claimed.update(confirmation_requested_at=None, confirmation_sent_at=None)
        return False
    try:
        message(subscriber, pending).send()
    except smtplib.SMTPRecipientsRefused as error:
        return _refused(claimed, subscriber, error)
    except (smtplib.SMTPException, OSError):
        logger.warning("Confirmation to subscriber %s not sent; the sweep retries.", subscriber_id, exc_info=True)
        claimed.update(confirmation_sent_at=None)
        return False
    claimed.update(confirmation_requested_at=None, confirmation_sent_at=timezone.now())
    return True


def _refused(claimed, subscriber: Subscriber, error: smtplib.SMTPRecipientsRefused) -> bool:
    """A permanent refusal (5xx) ends the debt: asking again every sweep would only be refused again."""
    codes = [code for code, _reply in error.recipients.values()]
    if codes and all(500 <= code < 600 for code in codes):
        logger.warning("Confirmation to subscriber %s refused for good: %s", subscriber.pk, error.recipients)
        claimed.update(confirmation_requested_at=None, confirmation_sent_at=None)
    else:
        claimed.update(confirmation_sent_at=None)
    return False


def message(subscriber: Subscriber, pending) -> EmailMultiAlternatives:
    context = {
        "confirm_url": links.confirm_url(subscriber),
        "follows": [describe(follow.kind, follow.target) for follow in pending],
        "hours": settings.NEWSLETTERS_CONFIRM_HOURS,
        "site_url": settings.SITE_URL,
    }
    email = EmailMultiAlternatives(
        subject=SUBJECT, to=[subscriber.email],
        body=render_to_string("newsletters/confirmation_email.txt", context),
    )
    email.attach_alternative(render_to_string("newsletters/confirmation_email.html", context), "text/html")
    return email


def sweep() -> int:
    """Queue ``send_confirmation`` for each confirmation still owed a minute after it was asked for."""
    now = timezone.now()
    owed = Subscriber.objects.filter(_owed(now), confirmation_requested_at__lte=now - SWEEP_GRACE)
    pks = list(owed.values_list("pk", flat=True))
    for pk in pks:
        confirmation_owed.send(sender=Subscriber, subscriber_id=pk)
    return len(pks)
