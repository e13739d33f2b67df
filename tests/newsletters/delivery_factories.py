"""Subscribers for the sending tests: confirmed (or not), following what they are given."""
from django.utils import timezone

from newsletters.models import Subscriber, Subscription


def subscriber(email: str, *follows: tuple[str, str], state=Subscriber.State.CONFIRMED, cadence="immediate",
               daily_at="08:00", confirmed=True) -> Subscriber:
    """A subscriber following each ``(kind, target)`` of ``follows`` with one cadence."""
    now = timezone.now()
    person = Subscriber.objects.create(email=email, state=state,
                                       confirmed_at=now if state == Subscriber.State.CONFIRMED else None)
    for kind, target in follows:
        Subscription.objects.create(subscriber=person, kind=kind, target=target, cadence=cadence,
                                    daily_at=daily_at, confirmed_at=now if confirmed else None)
    return person
