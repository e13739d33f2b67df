"""What sending and daily summaries share: claiming rows under a lease, one SMTP connection a batch,
classifying SMTP answers, and writing a batch's outcomes back in a statement per outcome.

A batch is claimed in a short transaction — on PostgreSQL ``SELECT … FOR UPDATE SKIP LOCKED``, so
workers take disjoint batches without waiting; SQLite has one writer, and the claim's UPDATE
re-checks the state — and marked ``sending`` with ``leased_until``. Outcomes are written when the
batch is done, so a worker killed mid-batch leaves its rows ``sending``: once the lease runs out the
sweep hands them back and they are sent again. That is the duplicate bound: at most one batch
(NEWSLETTERS_BATCH_SIZE emails) per worker killed, the ones it had already handed to the server.
"""
import dataclasses
import datetime
import smtplib

from django.conf import settings
from django.core.mail import get_connection
from django.core.mail.backends.smtp import EmailBackend as SmtpBackend
from django.db import connections, models, router, transaction
from django.db.models import Value
from django.db.models.functions import Cast, Concat
from django.utils import timezone

from .models import Delivery

#: The first retry's wait; each next one doubles it, up to NEWSLETTERS_RETRY_BACKOFF_MAX.
FIRST_BACKOFF_SECONDS = 30
#: What a claimed row's values give the sender.
ROW_VALUES = ["id", "message_id", "email", "subscriber_id", "subscriber__state", "subscriber__manage_key",
              "attempts", "in_summary"]


class ServerAway(Exception):
    """The SMTP server cannot be reached or dropped us: the batch stops and its rest is given back.
    ``tried``: it dropped us while sending one (that one used an attempt), not when connecting."""

    def __init__(self, message: str, tried: bool = False):
        super().__init__(message)
        self.tried = tried


def backoff(attempts: int) -> datetime.timedelta:
    seconds = FIRST_BACKOFF_SECONDS * 2 ** max(0, attempts - 1)
    return datetime.timedelta(seconds=min(seconds, settings.NEWSLETTERS_RETRY_BACKOFF_MAX))


def claim(candidates: models.QuerySet, limit: int) -> list[dict]:
    """Take up to ``limit`` of ``candidates`` (oldest first) under a new lease; returns their ROW_VALUES."""
    lease = timezone.now() + datetime.timedelta(seconds=settings.NEWSLETTERS_LEASE_SECONDS)
    alias = router.db_for_write(Delivery)
    with transaction.atomic(using=alias):
        picked = candidates.order_by("id")
        if connections[alias].features.has_select_for_update_skip_locked:
            picked = picked.select_for_update(skip_locked=True)
        ids = list(picked.values_list("id", flat=True)[:limit])
        if not ids:
            return []
        candidates.filter(id__in=ids).update(state=Delivery.State.SENDING, leased_until=lease,
                                             attempts=models.F("attempts") + 1)
    return list(Delivery.objects.filter(id__in=ids, state=Delivery.State.SENDING, leased_until=lease)
                .order_by("id").values(*ROW_VALUES))


def classify(error: Exception) -> tuple[str, str]:
    """("failed" | "retry" | "away", the error as text) for what sending one email raised."""
    if isinstance(error, smtplib.SMTPRecipientsRefused):
        code, reply = min(error.recipients.values(), default=(451, b""))
        return ("failed" if code >= 500 else "retry"), f"{code} {_text(reply)}"
    if isinstance(error, smtplib.SMTPResponseException):
        text = f"{error.smtp_code} {_text(error.smtp_error)}"
        if error.smtp_code == 421 or error.smtp_code < 400:  # closing the channel, or nonsense: try later
            return "away", text
        return ("failed" if error.smtp_code >= 500 else "retry"), text
    return "away", f"{type(error).__name__}: {error}"


def _text(reply) -> str:
    return reply.decode("utf-8", "replace") if isinstance(reply, bytes) else str(reply)


@dataclasses.dataclass
class Outcomes:
    """A batch's results, written back in a few statements: one UPDATE per distinct outcome.

    Rows with the same outcome share their values -- ``sent_at`` and a retry's time are taken once, when
    the batch is written -- and a sent row's Message-ID is its message's prefix, its subscriber's id and
    a suffix (``composing.Rendered.message_id``), so a batch of 100 sent rows is one UPDATE whose
    ``smtp_id`` is an expression. (Django's ``bulk_update`` writes a ``CASE WHEN`` per row and field:
    building it cost the sending worker more than the SMTP conversation did, bench/newsletters.py.)
    """

    rows: list[tuple[dict, dict]] = dataclasses.field(default_factory=list)

    def sent(self, row: dict, smtp_id: str) -> None:
        self._add(row, state=Delivery.State.SENT, smtp_id=smtp_id)

    def skipped(self, row: dict, why: str) -> None:
        self._add(row, state=Delivery.State.SUPPRESSED, last_error=why)

    def failed(self, row: dict, error: str) -> None:
        self._add(row, state=Delivery.State.FAILED, last_error=error)

    def retry(self, row: dict, error: str, tried: bool = True) -> None:
        """Back to waiting, after a backoff; an untried row (the server away) keeps its attempt count."""
        attempts = row["attempts"] if tried else max(0, row["attempts"] - 1)
        if tried and attempts >= settings.NEWSLETTERS_MAX_ATTEMPTS:
            return self.failed(row, f"{error} (gave up after {attempts} attempts)")
        waiting = Delivery.State.HELD if row["in_summary"] else Delivery.State.QUEUED
        self._add(row, state=waiting, last_error=error, attempts=attempts, backoff=backoff(max(1, attempts)))

    def count(self, state: str) -> int:
        return sum(values["state"] == state for _row, values in self.rows)

    def _add(self, row: dict, **values) -> None:
        self.rows.append((row, {"smtp_id": "", "last_error": "", "attempts": row["attempts"], "backoff": None,
                                **values}))

    def write(self) -> None:
        now = timezone.now()
        for (values, smtp_id), ids in self._grouped().items():
            values = dict(values)
            later = values.pop("backoff")
            Delivery.objects.filter(id__in=ids).update(
                **values, smtp_id=smtp_id, leased_until=None,
                sent_at=now if values["state"] == Delivery.State.SENT else None,
                next_attempt_at=now + later if later else now)

    def _grouped(self) -> dict[tuple, list[int]]:
        groups: dict[tuple, list[int]] = {}
        for row, values in self.rows:
            shared = tuple(sorted((name, value) for name, value in values.items() if name != "smtp_id"))
            groups.setdefault((shared, _message_id_of(values["smtp_id"], row["subscriber_id"])), []).append(row["id"])
        return groups


def _message_id_of(smtp_id: str, subscriber_id: int | None):
    """``smtp_id`` as the same value for every row of its message: an expression of the row's subscriber
    id where the id is in it (``<digest.7.42@domain>``), else the text itself (a test send's, or none)."""
    marker = f".{subscriber_id}@"
    if subscriber_id is None or marker not in smtp_id:
        return smtp_id
    before, after = smtp_id.split(marker, 1)
    return Concat(Value(f"{before}."), Cast("subscriber_id", models.CharField()), Value(f"@{after}"),
                  output_field=models.CharField())


class Connection:
    """One SMTP connection (Django's email backend) for a batch, and the fast path when it is SMTP:
    prebuilt bytes straight to its ``smtplib`` object (what Django's backend itself calls)."""

    def __init__(self):
        self.backend = get_connection(fail_silently=False)

    def __enter__(self):
        try:
            self.backend.open()
        except (OSError, smtplib.SMTPException) as error:
            raise ServerAway(f"{type(error).__name__}: {error}") from error
        return self

    def __exit__(self, *exc):
        try:
            self.backend.close()
        except (OSError, smtplib.SMTPException):
            pass

    @property
    def raw(self) -> smtplib.SMTP | None:
        return self.backend.connection if isinstance(self.backend, SmtpBackend) else None

    def send(self, to: str, mime, email_message) -> None:
        """Send one email: ``mime()`` gives its bytes (SMTP), ``email_message()`` a Django email (others)."""
        if self.raw is not None:
            self.raw.sendmail(settings.DEFAULT_FROM_EMAIL, [to], mime())
        else:
            self.backend.send_messages([email_message()])
