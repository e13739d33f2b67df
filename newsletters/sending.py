"""Sending deliveries in batches over one SMTP connection each, durably (``batches`` says how).

``send_due`` takes the due ``queued`` deliveries batch by batch until none is left or the server is
away: accepted → ``sent``; refused for good (5xx) → ``failed``; refused for now (4xx) → ``queued``
again after a backoff (``failed`` after NEWSLETTERS_MAX_ATTEMPTS); the server unreachable or gone →
the batch stops and what it had not sent is given back untouched, so an outage loses no one and
does not hammer the server. A delivery whose subscriber is no longer confirmed, or whose address
was suppressed since the fan-out, is ``suppressed`` instead of sent.

``sweep`` (beat) is what makes lost work come back: expired leases and daily summaries now due;
``owed`` names the messages with due deliveries whose task no longer waits in the broker (the
tasks module queues them: this module never imports it).
"""
from django.conf import settings
from django.utils import timezone

from . import composing, summaries
from .batches import Connection, Outcomes, ServerAway, claim, classify
from .models import Delivery, Subscriber, Suppression

def due(message_id: int | None = None):
    now = timezone.now()
    found = Delivery.objects.filter(state=Delivery.State.QUEUED, in_summary=False, due_at__lte=now,
                                    next_attempt_at__lte=now)
    return found if message_id is None else found.filter(message_id=message_id)


def send_due(message_id: int | None = None) -> int:
    """Send what is due (of one message, or all); returns how many were sent."""
    shared: dict[int, composing.Rendered] = {}
    prefixes = None
    sent = 0
    while rows := claim(due(message_id), settings.NEWSLETTERS_BATCH_SIZE):
        prefixes = prefixes or composing.link_prefixes()
        done, away = send_batch(rows, shared, prefixes)
        sent += done
        if away:
            break
    return sent


def unwanted(rows: list[dict]) -> set[str]:
    """The batch's addresses suppressed since the fan-out (one query)."""
    return Suppression.objects.among({row["email"] for row in rows})


def send_batch(rows: list[dict], shared: dict, prefixes: tuple[str, str]) -> tuple[int, bool]:
    """Send a claimed batch over one connection; returns (how many sent, whether the server is away)."""
    outcomes, suppressed, done = Outcomes(), unwanted(rows), 0
    away = None
    try:
        with Connection() as connection:
            for row in rows:
                _send_one(connection, row, shared, prefixes, suppressed, outcomes)
                done += 1
    except ServerAway as error:
        away = error
    if away is not None:  # the row the server dropped (if any), then the untried ones, wait and come back
        for index, row in enumerate(rows[done:]):
            outcomes.retry(row, str(away), tried=away.tried and index == 0)
    outcomes.write()
    return outcomes.count(Delivery.State.SENT), away is not None


def _send_one(connection, row: dict, shared: dict, prefixes, suppressed: set, outcomes: Outcomes) -> None:
    """Send one row and record its outcome; raises ServerAway (nothing recorded) when the server is."""
    if row["subscriber_id"] is not None and row["subscriber__state"] != Subscriber.State.CONFIRMED:
        return outcomes.skipped(row, "The subscriber is no longer confirmed.")
    if row["email"] in suppressed:
        return outcomes.skipped(row, "The address is suppressed.")
    try:
        if row["message_id"] not in shared:
            shared[row["message_id"]] = composing.rendered(row["message_id"])
    except LookupError as error:
        return outcomes.failed(row, str(error))
    message_id, mime, django_email = _personalised(shared[row["message_id"]], row, prefixes)
    try:
        connection.send(row["email"], mime, django_email)
    except Exception as error:  # noqa: BLE001  every SMTP or socket error is classified, none escapes a batch
        verdict, text = classify(error)
        if verdict == "away":
            raise ServerAway(text, tried=True) from error
        return (outcomes.failed if verdict == "failed" else outcomes.retry)(row, text)
    outcomes.sent(row, message_id)


def _personalised(shared: composing.Rendered, row: dict, prefixes):
    """The row's Message-ID and two builders of its email (bytes for SMTP, a Django email otherwise)."""
    if row["subscriber_id"] is None:  # an editor's test send: no subscriber links
        home = f"{settings.SITE_URL}/"
        message_id = shared.message_id(None, row["message_id"])
        build = lambda: shared.email(row["email"], message_id, home, None)  # noqa: E731
        return message_id, lambda: build().message().as_bytes(linesep="\r\n"), build
    manage, unsubscribe = composing.recipient_links(row["subscriber_id"], row["subscriber__manage_key"], prefixes)
    message_id = shared.message_id(row["subscriber_id"])
    return (message_id, lambda: shared.mime(row["email"], message_id, manage, unsubscribe),
            lambda: shared.email(row["email"], message_id, manage, unsubscribe))


def sweep() -> str:
    """Hand back expired leases and send the daily summaries due (``tasks`` then queues ``owed()``)."""
    now = timezone.now()
    expired = Delivery.objects.filter(state=Delivery.State.SENDING, leased_until__lt=now)
    handed_back = expired.filter(in_summary=False).update(state=Delivery.State.QUEUED, leased_until=None)
    handed_back += expired.filter(in_summary=True).update(state=Delivery.State.HELD, leased_until=None)
    return f"leases handed back {handed_back}, summaries sent {summaries.send_due()}"


def owed(waiting: set[str]) -> list[int]:
    """Messages with due deliveries whose send task is not among ``waiting`` (``publishing.queues``)."""
    return [pk for pk in due().values_list("message_id", flat=True).distinct() if str(pk) not in waiting]
