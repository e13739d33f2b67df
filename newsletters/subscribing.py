"""Signing up, confirming and leaving: the rules, apart from the views that call them.

Double opt-in, and one rule for every case: **a follow is mailed only once a link from the
reader's inbox confirmed it** (``Subscription.confirmed_at``).

- A new address is stored pending with its follow, and owed a confirmation email.
- A pending address gets the follow added (a second sign-up's cadence wins over a first one's still
  unconfirmed) and the confirmation email again (the sign-up rate per address bounds how often).
- An unsubscribed address goes back to pending, as a new one.
- A confirmed address adding a follow gets it stored unconfirmed and an email asking to confirm it;
  its other follows go on as they were. A follow it already has is left as it is, and nothing is sent:
  the manage page is where cadences change.
- A suppressed address (a hard bounce, a complaint) is neither stored nor mailed.

The page answering a sign-up is the same in every case, so the form tells no one whether an address
is subscribed.
"""
import datetime

from django.db import IntegrityError, transaction
from django.utils import timezone

from . import confirmations
from .models import Subscriber, Subscription, Suppression


def subscribe(email: str, kind: str, target: str, cadence: str, daily_at: datetime.time) -> Subscriber | None:
    """Sign `email` (normalised) up to (kind, target); None when the address is suppressed."""
    if Suppression.objects.for_address(email).exists():
        return None
    with transaction.atomic():
        subscriber = _locked_subscriber(email)
        if subscriber.state == Subscriber.State.UNSUBSCRIBED:
            subscriber.state = Subscriber.State.PENDING
            subscriber.unsubscribed_at = None
            subscriber.save(update_fields=["state", "unsubscribed_at"])
        follow, created = Subscription.objects.get_or_create(
            subscriber=subscriber, kind=kind, target=target, defaults={"cadence": cadence, "daily_at": daily_at},
        )
        if not created and follow.confirmed_at is None:
            follow.cadence, follow.daily_at = cadence, daily_at
            follow.save(update_fields=["cadence", "daily_at"])
        if subscriber.state == Subscriber.State.PENDING or follow.confirmed_at is None:
            confirmations.request(subscriber)
    return subscriber


def _locked_subscriber(email: str) -> Subscriber:
    """The subscriber with this address (any case), locked for this transaction; created if new."""
    existing = Subscriber.objects.select_for_update().for_address(email).first()
    if existing is not None:
        return existing
    try:
        with transaction.atomic():
            return Subscriber.objects.create(email=email)
    except IntegrityError:  # another request created it meanwhile
        return Subscriber.objects.select_for_update().for_address(email).get()


def confirm(subscriber: Subscriber) -> None:
    """The confirmation link was used: the address and every follow waiting for it are confirmed.

    Emptying ``confirm_key`` makes the link single-use; the email is no longer owed.
    """
    now = timezone.now()
    with transaction.atomic():
        Subscriber.objects.filter(pk=subscriber.pk).update(
            state=Subscriber.State.CONFIRMED, confirmed_at=subscriber.confirmed_at or now, confirm_key="",
            confirmation_requested_at=None, unsubscribed_at=None,
        )
        subscriber.subscriptions.filter(confirmed_at__isnull=True).update(confirmed_at=now)
    subscriber.refresh_from_db()


def unsubscribe(subscriber: Subscriber) -> None:
    """Leave everything at once (the List-Unsubscribe POST, the manage page): no follow is kept.

    A new ``confirm_key`` makes a confirmation link still in the inbox useless.
    """
    with transaction.atomic():
        subscriber.subscriptions.all().delete()
        subscriber.state = Subscriber.State.UNSUBSCRIBED
        subscriber.unsubscribed_at = timezone.now()
        subscriber.confirmation_requested_at = None
        subscriber.confirm_key = ""
        subscriber.save(update_fields=["state", "unsubscribed_at", "confirmation_requested_at", "confirm_key"])


def delete_data(subscriber: Subscriber) -> None:
    """Forget the subscriber: the address, its follows and what was mailed to it. Suppressions stay."""
    subscriber.delete()
