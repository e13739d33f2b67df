"""Confirmation emails (double opt-in), owed in the database and sent once.

``request()`` records that an email is owed (``confirmation_requested_at``) in the sign-up's own
transaction and queues ``send_confirmation`` once it commits. ``send()`` claims the owed email with
a conditional UPDATE — ``confirmation_sent_at`` set to the claim's time, only where no live claim
is — so of two workers given the same subscriber, one sends. A sent email clears the debt; an SMTP
failure gives the claim back, and a claim whose worker died expires after ``CLAIM_SECONDS``.

Many at once (a CSV import owes one per new address: 100,000 is not 100,000 tasks) are only written
as owed; ``send_owed()`` claims them ``NEWSLETTERS_BATCH_SIZE`` at a time (``SKIP LOCKED`` on
PostgreSQL, so workers take disjoint batches) and sends each batch over one SMTP connection, its
outcomes written in a statement each. The beat sweep queues that one task (``tasks``) when ``sweep()``
finds confirmations owed past ``SWEEP_GRACE``, so a lost task or a Redis restart loses no email.

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
from django.db import connections, router, transaction
from django.db.models import Prefetch, Q
from django.dispatch import Signal
from django.template.loader import render_to_string
from django.utils import timezone

from . import links
from .batches import Connection, ServerAway, classify
from .forms import describe
from .models import Subscriber, Subscription, Suppression, new_key

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
    """How many confirmations are still owed a minute after they were asked for (the task queued with each
    one is lost, or an import owes them): ``tasks`` then queues ``send_owed`` once, not a task each."""
    now = timezone.now()
    return Subscriber.objects.filter(_owed(now), confirmation_requested_at__lte=now - SWEEP_GRACE).count()


def send_owed() -> int:
    """Send the owed confirmations, batch by batch, until none is left or the server is away; returns how many."""
    sent = 0
    while batch := _claim(settings.NEWSLETTERS_BATCH_SIZE):
        done, away = _send_batch(*batch)
        sent += done
        if away:
            break
    return sent


def _claim(limit: int) -> tuple[list[Subscriber], datetime.datetime] | None:
    """Take up to `limit` owed confirmations (oldest first) under a claim made now."""
    now = timezone.now()
    alias = router.db_for_write(Subscriber)
    with transaction.atomic(using=alias):
        picked = Subscriber.objects.filter(_owed(now)).order_by("confirmation_requested_at", "id")
        if connections[alias].features.has_select_for_update_skip_locked:
            picked = picked.select_for_update(skip_locked=True)
        ids = list(picked.values_list("id", flat=True)[:limit])
        if not ids or not Subscriber.objects.filter(_owed(now), id__in=ids).update(confirmation_sent_at=now):
            return None
    claimed = (Subscriber.objects.filter(id__in=ids, confirmation_sent_at=now).order_by("id")
               .prefetch_related(Prefetch("subscriptions", to_attr="pending",
                                          queryset=Subscription.objects.filter(confirmed_at__isnull=True)
                                          .order_by("created_at"))))
    return list(claimed), now


def _send_batch(subscribers: list[Subscriber], claimed_at) -> tuple[int, bool]:
    """Send a claimed batch over one connection; the outcomes in an UPDATE each. Returns (sent, server away).

    Sent, or refused for good (5xx), or no longer wanted: the debt ends. Refused for now (4xx): the claim
    stays and expires after CLAIM_SECONDS, the retry's wait. The server away: the rows not sent are given
    back at once and the batches stop (the sweep queues them again)."""
    emails = [subscriber.email for subscriber in subscribers]
    suppressed = Suppression.objects.among(emails)
    sent, ended, later, away = [], [], [], False
    try:
        with Connection() as connection:
            for subscriber in subscribers:
                if not subscriber.pending or subscriber.email in suppressed:
                    ended.append(subscriber.pk)
                    continue
                try:
                    connection.backend.send_messages([message(subscriber, subscriber.pending)])
                except Exception as error:  # noqa: BLE001  classified: refused for good, for now, or the server away
                    verdict, text = classify(error)
                    if verdict == "away":
                        raise ServerAway(text) from error
                    if verdict == "failed":  # refused for good: asking again would be refused again
                        ended.append(subscriber.pk)
                    else:  # refused for now: kept under its claim, so it is tried again when that expires
                        later.append(subscriber.pk)
                    logger.warning("Confirmation to subscriber %s not sent: %s", subscriber.pk, text)
                    continue
                sent.append(subscriber.pk)
    except ServerAway:
        logger.warning("The SMTP server is away; confirmations wait for the sweep.", exc_info=True)
        away = True
    done = {*sent, *ended, *later}
    given_back = [s.pk for s in subscribers if s.pk not in done]  # not tried: the server went away
    mine = Subscriber.objects.filter(confirmation_sent_at=claimed_at)
    mine.filter(id__in=sent).update(confirmation_requested_at=None, confirmation_sent_at=timezone.now())
    mine.filter(id__in=ended).update(confirmation_requested_at=None, confirmation_sent_at=None)
    mine.filter(id__in=given_back).update(confirmation_sent_at=None)
    return len(sent), away
