"""Subscribers to and from CSV, for editors moving a list in or out (the admin's export action and import page).

Export streams: rows are written as the database cursor yields them (``.iterator()``), so 100,000
subscribers never sit in memory at once. Every cell a spreadsheet could read as a formula (starting
with ``=``, ``+``, ``-``, ``@``, a tab or a carriage return) gets a leading ``'``.

Import (``import_rows``, run by a worker: ``newsletters.imports``) never sends mail to people who did
not ask for it: a new address is ``pending`` with ``consent=imported`` and is owed a confirmation
(double opt-in, as a sign-up is; written with the row, sent in batches by ``confirmations.send_owed``) —
unless the importer states the people consented already, then it is ``confirmed`` at once with
``consent=imported_consent``. A ``state`` column, as the export writes it, is honoured where it
withholds mail: an ``unsubscribed`` row is kept unsubscribed, a ``pending`` row is asked to confirm even
with the consent box. An address already stored is left as it is (its owner's choices win over a file);
rows repeating an address in the file add their follows to it. Bad rows are reported by line and
skipped; the others are imported.
"""
import csv
import datetime
import io
from dataclasses import dataclass, field
from itertools import groupby

from django.db import IntegrityError, transaction
from django.utils import timezone
from email_validator import EmailNotValidError, validate_email

from .models import Subscriber, Subscription, Suppression

HEADER = ["email", "state", "consent", "created_at", "confirmed_at", "follows", "cadence"]
#: A cell starting with one of these is a formula to Excel, LibreOffice or Sheets (OWASP "CSV injection").
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
#: Rows read and written to the database at a time.
BATCH = 1000
#: Kinds whose subscription names no target (all the Wire, all the blog).
WHOLE = {Subscription.Kind.WIRE, Subscription.Kind.BLOG}


def guard(value) -> str:
    """`value` as a cell no spreadsheet runs as a formula."""
    text = "" if value is None else str(value)
    return f"'{text}" if text.startswith(FORMULA_STARTS) else text


def _cadence(subscription: Subscription) -> str:
    if subscription.cadence == Subscription.Cadence.DAILY:
        return f"daily@{subscription.daily_at:%H:%M}"
    return subscription.cadence


def subscriber_rows(subscriber: Subscriber):
    """One row per cadence the subscriber follows things at (one row in the usual case; one, with no
    follows, for a subscriber following nothing)."""
    base = [subscriber.email, subscriber.state, subscriber.consent,
            subscriber.created_at.isoformat(), subscriber.confirmed_at.isoformat() if subscriber.confirmed_at else ""]
    subscriptions = sorted(subscriber.subscriptions.all(), key=lambda s: (_cadence(s), s.kind, s.target))
    if not subscriptions:
        yield [*base, "", ""]
    for cadence, group in groupby(subscriptions, key=_cadence):
        follows = " ".join(f"{s.kind}:{s.target}" if s.target else s.kind for s in group)
        yield [*base, follows, cadence]


class _Echo:
    """A file whose write returns what was written: csv.writer then yields lines to stream."""

    def write(self, value):
        return value


def export_lines(queryset):
    """The CSV's lines, the header first; subscribers read in chunks with their subscriptions."""
    writer = csv.writer(_Echo())
    yield writer.writerow(HEADER)
    for subscriber in queryset.order_by("pk").prefetch_related("subscriptions").iterator(chunk_size=BATCH):
        for row in subscriber_rows(subscriber):
            yield writer.writerow([guard(cell) for cell in row])


class BadRow(ValueError):
    pass


@dataclass
class Row:
    line: int
    email: str
    follows: list[tuple[str, str]]
    cadence: str
    daily_at: datetime.time | None
    state: str


@dataclass
class Report:
    created: int = 0
    existing: int = 0
    suppressed: int = 0
    confirmations: int = 0
    invalid: list[tuple[int, str]] = field(default_factory=list)


def parse_follows(text: str, default: tuple[str, ...] = (Subscription.Kind.WIRE.value,)) -> list[tuple[str, str]]:
    """``kind:target`` tokens, space-separated (``wire`` and ``blog`` alone); empty means `default` (The Wire)."""
    follows = []
    for token in text.split() or default:
        kind, _, target = token.partition(":")
        kind = kind.strip().lower()
        if kind not in Subscription.Kind.values:
            raise BadRow(f"unknown kind {kind!r} in {token!r} (one of {', '.join(Subscription.Kind.values)})")
        if kind in WHOLE and target:
            raise BadRow(f"{kind} takes no target ({token!r})")
        if kind not in WHOLE and not target:
            raise BadRow(f"{kind} needs a target, as {kind}:name ({token!r})")
        if len(target) > 200:
            raise BadRow(f"target longer than 200 characters ({token[:40]!r}…)")
        follows.append((kind, target))
    return list(dict.fromkeys(follows))


def parse_cadence(text: str) -> tuple[str, datetime.time | None]:
    """``immediate`` (or empty), ``daily``, or ``daily@HH:MM``."""
    cadence, _, at = text.strip().lower().partition("@")
    if cadence in ("", Subscription.Cadence.IMMEDIATE) and not at:
        return Subscription.Cadence.IMMEDIATE, None
    if cadence != Subscription.Cadence.DAILY:
        raise BadRow(f"cadence must be immediate, daily or daily@HH:MM, not {text!r}")
    try:
        return cadence, datetime.time.fromisoformat(at) if at else None
    except ValueError:
        raise BadRow(f"bad time in cadence {text!r}") from None


def parse_row(line: int, cells: dict) -> Row:
    try:
        email = validate_email((cells.get("email") or "").strip(), check_deliverability=False).normalized
    except EmailNotValidError as error:
        raise BadRow(f"{(cells.get('email') or '').strip()[:80]!r}: {error}") from None
    state = (cells.get("state") or "").strip().lower()
    if state and state not in Subscriber.State.values:
        raise BadRow(f"unknown state {state!r}")
    cadence, daily_at = parse_cadence(cells.get("cadence") or "")
    default = () if state == Subscriber.State.UNSUBSCRIBED else (Subscription.Kind.WIRE.value,)
    return Row(line, email, parse_follows(cells.get("follows") or "", default), cadence, daily_at, state)


def read_rows(text: str, report: Report, after: int = 0):
    """Parsed rows of the CSV `text` past line `after` (an import taken over goes on where it stopped);
    bad ones are noted in `report` with their line and skipped.

    A first row starting with ``email`` is a header naming the columns (any order, others ignored);
    without one the columns are email, follows, cadence."""
    reader = csv.reader(io.StringIO(text))
    columns = ["email", "follows", "cadence"]
    while True:
        try:
            cells = next(reader)
        except StopIteration:
            return
        except csv.Error as error:  # a field over csv's size limit, a quote never closed
            if reader.line_num > after:
                report.invalid.append((reader.line_num, f"unreadable: {error}"))
            continue
        if reader.line_num == 1 and cells and cells[0].strip().lower() == "email":
            columns = [cell.strip().lower() for cell in cells]
            continue
        if reader.line_num <= after or not any(cell.strip() for cell in cells):
            continue
        try:
            yield parse_row(reader.line_num, dict(zip(columns, cells)))
        except BadRow as error:
            report.invalid.append((reader.line_num, str(error)))


def _new_subscriber(row: Row, consented: bool, now) -> Subscriber:
    """A pending one is owed its confirmation in its own row (``confirmations``): no task per address."""
    if row.state == Subscriber.State.UNSUBSCRIBED:
        return Subscriber(email=row.email, state=row.state, consent=Subscriber.Consent.IMPORTED, unsubscribed_at=now)
    if consented and row.state != Subscriber.State.PENDING:
        return Subscriber(email=row.email, state=Subscriber.State.CONFIRMED,
                          consent=Subscriber.Consent.IMPORTED_WITH_CONSENT, confirmed_at=now, confirm_key="")
    return Subscriber(email=row.email, state=Subscriber.State.PENDING, consent=Subscriber.Consent.IMPORTED,
                      confirmation_requested_at=now)


def _subscriptions(subscriber: Subscriber, rows: list[Row]) -> list[Subscription]:
    """The rows' follows; confirmed with their subscriber (else its confirmation link confirms them)."""
    found, confirmed_at = {}, subscriber.confirmed_at
    for row in rows:
        for kind, target in row.follows:
            extra = {"daily_at": row.daily_at} if row.daily_at else {}
            found.setdefault((kind, target), Subscription(subscriber=subscriber, kind=kind, target=target,
                                                          cadence=row.cadence, confirmed_at=confirmed_at, **extra))
    return list(found.values())


def _import_batch(rows: list[Row], consented: bool, report: Report, tries: int = 3) -> None:
    """``_write_batch``, again if an address of the batch was signed up meanwhile (the unique index refused it)."""
    for attempt in range(tries):
        counted = Report()
        try:
            _write_batch(rows, consented, counted)
        except IntegrityError:
            if attempt == tries - 1:
                raise
            continue
        report.created += counted.created
        report.existing += counted.existing
        report.suppressed += counted.suppressed
        report.confirmations += counted.confirmations
        return


def _write_batch(rows: list[Row], consented: bool, report: Report) -> None:
    """Create the batch's new subscribers (the pending ones owed a confirmation) and their subscriptions."""
    by_email: dict[str, list[Row]] = {}
    for row in rows:
        by_email.setdefault(row.email, []).append(row)
    stored = set(Subscriber.objects.filter(email__in=by_email).values_list("email", flat=True))
    suppressed = Suppression.objects.among(by_email) - stored
    report.existing += sum(len(by_email[email]) for email in stored)
    report.suppressed += sum(len(by_email[email]) for email in suppressed)
    now = timezone.now()
    with transaction.atomic():
        new = Subscriber.objects.bulk_create([_new_subscriber(group[0], consented, now)
                                              for email, group in by_email.items() if email not in stored | suppressed])
        # An address signed up since the look-up fails the unique index: the batch rolls back, is tried again.
        Subscription.objects.bulk_create([subscription for subscriber in new
                                          for subscription in _subscriptions(subscriber, by_email[subscriber.email])])
    report.confirmations += sum(subscriber.state == Subscriber.State.PENDING for subscriber in new)
    report.created += len(new)


def batches(text: str, report: Report, after: int = 0):
    """The rows of `text` past line `after` in batches of about BATCH, a run of rows repeating an address
    never split (a later batch's rows repeating an address of an earlier one count as already there)."""
    batch: list[Row] = []
    for row in read_rows(text, report, after):
        if batch and len(batch) >= BATCH and row.email != batch[-1].email:
            yield batch
            batch = []
        batch.append(row)
    if batch:
        yield batch


def import_batch(rows: list[Row], consented: bool) -> Report:
    """Write one batch (see the module's docstring); what it did, counted."""
    report = Report()
    _import_batch(rows, consented, report)
    return report


def import_rows(text: str, consented: bool) -> Report:
    """Import the CSV `text` at once, in this process (``imports.run`` is the worker's, resumable)."""
    report = Report()
    for batch in batches(text, report):
        _import_batch(batch, consented, report)
    return report
