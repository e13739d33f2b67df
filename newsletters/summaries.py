"""Daily summaries: a subscriber's held deliveries whose time came, sent as one email listing each item.

The rows are claimed under a lease like any batch (``batches``), a subscriber's all at once, and
get one outcome together: sent (one email), failed, or held again after a backoff. A lease that
runs out hands them back as ``held`` (``Delivery.in_summary``), never as separate emails.
"""
from django.conf import settings
from django.template.loader import render_to_string
from django.utils import timezone
from django.utils.text import Truncator

from . import composing
from .batches import Connection, Outcomes, ServerAway, claim, classify
from .models import Delivery, Message, Subscriber, Suppression

#: Subscribers whose summary is sent per claim (each summary lists that day's few items).
SUBSCRIBERS_PER_BATCH = 50
TEASER_WORDS = 45


def due():
    now = timezone.now()
    return Delivery.objects.filter(state=Delivery.State.HELD, in_summary=True, due_at__lte=now,
                                   next_attempt_at__lte=now)


def send_due() -> int:
    """Send every summary due; returns how many emails were sent."""
    sent = 0
    while True:
        subscribers = list(due().order_by("subscriber_id").values_list("subscriber_id", flat=True)
                           .distinct()[:SUBSCRIBERS_PER_BATCH])
        rows = claim(due().filter(subscriber_id__in=subscribers), limit=10**6) if subscribers else []
        if not rows:
            return sent
        done, away = send_batch(rows)
        sent += done
        if away:
            return sent


def items(message_ids: set[int]) -> dict[int, dict]:
    """What a summary lists per message: kicker, headline, teaser, link (one query)."""
    found = {}
    for message in Message.objects.filter(pk__in=message_ids).select_related("digest", "post"):
        if message.digest is not None:
            kicker, teaser = message.digest.kicker, message.digest.description
        elif message.post is not None:
            kicker, teaser = "Blog", message.post.display_excerpt
        else:
            continue
        found[message.pk] = {"kicker": kicker, "headline": message.subject, "url": message.url,
                             "teaser": Truncator(teaser).words(TEASER_WORDS)}
    return found


def render(rows: list[dict], listed: dict[int, dict]) -> composing.Rendered:
    shown = [listed[row["message_id"]] for row in rows if row["message_id"] in listed]
    subject = f"Your RepoJournal summary: {len(shown)} new item{'s' if len(shown) != 1 else ''}"
    body = render_to_string("newsletters/email/summary.html", {"subject": subject, "items": shown})
    return composing.finish("summary", min(row["id"] for row in rows), subject, "Daily summary", body,
                            f"{settings.SITE_URL}/")


def send_batch(rows: list[dict]) -> tuple[int, bool]:
    """One email per subscriber in the claimed rows; returns (emails sent, whether the server is away)."""
    by_subscriber: dict[int, list[dict]] = {}
    for row in rows:
        by_subscriber.setdefault(row["subscriber_id"], []).append(row)
    listed = items({row["message_id"] for row in rows})
    suppressed = Suppression.objects.among({row["email"] for row in rows})
    outcomes, sent, finished = Outcomes(), 0, set()
    try:
        with Connection() as connection:
            for subscriber_id, group in by_subscriber.items():
                sent += _send_one(connection, group, listed, suppressed, outcomes)
                finished.add(subscriber_id)
    except ServerAway as error:
        for row in rows:
            if row["subscriber_id"] not in finished:
                outcomes.retry(row, str(error), tried=error.tried)
    outcomes.write()
    return sent, len(finished) < len(by_subscriber)


def _send_one(connection, group: list[dict], listed: dict, suppressed: set, outcomes: Outcomes) -> int:
    first = group[0]
    if first["subscriber__state"] != Subscriber.State.CONFIRMED or first["email"] in suppressed:
        for row in group:
            outcomes.skipped(row, "The subscriber is no longer confirmed, or the address is suppressed.")
        return 0
    shared = render(group, listed)
    manage, unsubscribe = composing.recipient_links(first["subscriber_id"], first["subscriber__manage_key"])
    message_id = shared.message_id(first["subscriber_id"])
    try:
        connection.send(first["email"], lambda: shared.mime(first["email"], message_id, manage, unsubscribe),
                        lambda: shared.email(first["email"], message_id, manage, unsubscribe))
    except Exception as error:  # noqa: BLE001  classified like any send (batches.classify)
        verdict, text = classify(error)
        if verdict == "away":
            raise ServerAway(text, tried=True) from error
        for row in group:
            (outcomes.failed if verdict == "failed" else outcomes.retry)(row, text)
        return 0
    for row in group:
        outcomes.sent(row, message_id)
    return 1
