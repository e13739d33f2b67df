"""A message's progress: its deliveries counted by state, in the statement that lists the messages.

The admin's list of messages, a message's page and the newsroom's "Newsletters" block all read
progress through ``with_progress``: one ``Count(filter=…)`` per state over the message's deliveries
(``COUNT(…) FILTER (WHERE state = …)`` on PostgreSQL, a ``CASE`` on SQLite), grouped by message — one
statement for a page of messages, however many deliveries each has, read through the
(message, state) index. ``sends`` is the newsroom's: messages still going out, and those of the last
days with failures.
"""
import datetime

from django.db.models import Count, Exists, OuterRef, Q

from .models import Delivery, Message

#: The states shown, in the order a delivery moves through them (then the ways it ends without being sent).
STATES = [Delivery.State.QUEUED, Delivery.State.SENDING, Delivery.State.SENT, Delivery.State.FAILED,
          Delivery.State.BOUNCED, Delivery.State.HELD, Delivery.State.SUPPRESSED]
#: Deliveries not yet done with: a message with any is still going out.
IN_PROGRESS = [Delivery.State.QUEUED, Delivery.State.SENDING]
#: Deliveries that did not arrive.
FAILURES = [Delivery.State.FAILED, Delivery.State.BOUNCED]
#: How far back the newsroom shows messages with failures.
FAILURES_SINCE = datetime.timedelta(days=7)


def annotation(state: str) -> str:
    return f"{state}_count"


def with_progress(queryset):
    """`queryset` of messages, each with ``<state>_count`` for every state of ``STATES``, and ``total_count``."""
    counts = {annotation(state): Count("deliveries", filter=Q(deliveries__state=state)) for state in STATES}
    return queryset.annotate(total_count=Count("deliveries"), **counts)


def counts_of(message) -> list[tuple[str, int]]:
    """(state label, count) for a message read through ``with_progress``."""
    return [(Delivery.State(state).label, getattr(message, annotation(state))) for state in STATES]


def _having(states) -> Exists:
    """Whether a message has a delivery in one of `states` (an index probe on (message, state))."""
    return Exists(Delivery.objects.filter(message=OuterRef("pk"), state__in=states))


def sends(now, rows: int) -> tuple[list[Message], bool]:
    """Messages (not tests) still going out, and those created in the last FAILURES_SINCE with failed
    deliveries, newest first, with their progress: the first `rows` and whether there are more, in one
    statement. The ``EXISTS`` conditions choose the messages before their deliveries are counted."""
    chosen = Q(_having(IN_PROGRESS)) | (Q(created_at__gte=now - FAILURES_SINCE) & Q(_having(FAILURES)))
    messages = list(with_progress(Message.objects.filter(chosen, is_test=False)).order_by("-created_at", "-pk")
                    [:rows + 1])
    for message in messages:
        message.in_progress = any(getattr(message, annotation(state)) for state in IN_PROGRESS)
    return messages[:rows], len(messages) > rows
