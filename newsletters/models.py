"""Readers following by email: who, what they follow, what was mailed to whom.

A `Subscriber` is one normalised address and its consent (pending until the confirmation link is
used: double opt-in). A `Subscription` is one thing they follow — The Wire, the blog, a topic, a
repository, a tag or an author — and how: each item as it is published, or a daily summary.
A `Suppression` is an address never mailed again (a hard bounce, a spam complaint), kept even when
the subscriber's data is deleted.

A `Message` is one published post or digest as an email (written once per item: the unique
constraints are what make "one email per item" hold across processes). A `Delivery` is that
message on its way to one subscriber — one row per (message, subscriber), whatever number of their
subscriptions match — and is what makes sending durable: its state and ``next_attempt_at`` live in
the database, a worker holds a batch under a lease (``leased_until``), and the beat sweep hands
back what a killed worker held. A daily-summary delivery waits as ``held`` until its ``due_at``.
"""
import secrets

from django.conf import settings
from django.db import models
from django.db.models import Value
from django.db.models.functions import Lower
from django.utils import timezone


def new_key() -> str:
    return secrets.token_urlsafe(16)


class AddressQuerySet(models.QuerySet):
    def for_address(self, email: str):
        """Rows whose address is `email` whatever its case: ``LOWER(email) = LOWER('…')``, the expression of the
        table's ``Lower("email")`` index. (``email__iexact`` is ``UPPER(email::text) = UPPER(…)`` on PostgreSQL,
        which no index serves: a scan of every subscriber per sign-up.) Both sides are lowered by the database,
        so its own case rules decide, as they did when the index was built."""
        return self.alias(email_lower=Lower("email")).filter(email_lower=Lower(Value(email)))

    def among(self, emails) -> set[str]:
        """Those of `emails` (as given) that have a row here whatever its case, in one query through the same
        ``Lower("email")`` index: a suppression stored as ``Ada@example.com`` (a provider's bounce report)
        stops mail to ``ada@example.com``, in a batch as for one address."""
        lowered = {email.lower(): email for email in emails}
        found = (self.alias(email_lower=Lower("email")).filter(email_lower__in=lowered)
                 .annotate(address=Lower("email")).values_list("address", flat=True))
        return {lowered[address] for address in found if address in lowered}


class Subscriber(models.Model):
    class State(models.TextChoices):
        PENDING = "pending", "pending confirmation"
        CONFIRMED = "confirmed"
        UNSUBSCRIBED = "unsubscribed"

    class Consent(models.TextChoices):
        FORM = "form", "signed up on the site"
        IMPORTED = "imported", "imported; confirmation sent"
        IMPORTED_WITH_CONSENT = "imported_consent", "imported with consent stated by the importer"

    email = models.EmailField(unique=True, help_text="Normalised (email-validator): domain lower-cased, Unicode NFC.")
    state = models.CharField(max_length=16, choices=State.choices, default=State.PENDING, db_index=True)
    consent = models.CharField(max_length=16, choices=Consent.choices, default=Consent.FORM)
    created_at = models.DateTimeField(auto_now_add=True)
    confirmed_at = models.DateTimeField(null=True, blank=True)
    unsubscribed_at = models.DateTimeField(null=True, blank=True)
    confirmation_requested_at = models.DateTimeField(
        null=True, blank=True, help_text="A confirmation email is owed since then (sent once; the sweep sends it if a worker died).",
    )
    confirmation_sent_at = models.DateTimeField(null=True, blank=True)
    confirm_key = models.CharField(
        max_length=40, blank=True, default=new_key, editable=False,
        help_text="In the confirmation link; emptied once used, so each link confirms once.",
    )
    manage_key = models.CharField(
        max_length=40, default=new_key, editable=False,
        help_text="In every email's manage and unsubscribe links; a new one makes the old links stop working.",
    )

    objects = AddressQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at"]
        indexes = [
            # Sign-up finds an address whatever its case (AddressQuerySet.for_address) through this one.
            models.Index(Lower("email"), name="newsletters_subscriber_lower"),
            # The confirmations owed (confirmations.send_owed claims them in batches): a few rows of many.
            models.Index(fields=["confirmation_requested_at", "id"], name="newsletters_owed_idx",
                         condition=models.Q(confirmation_requested_at__isnull=False)),
        ]

    def __str__(self) -> str:
        return self.email


class Subscription(models.Model):
    class Kind(models.TextChoices):
        WIRE = "wire", "The Wire"
        BLOG = "blog", "the blog"
        TOPIC = "topic"
        REPOSITORY = "repository"
        TAG = "tag"
        AUTHOR = "author"

    class Cadence(models.TextChoices):
        IMMEDIATE = "immediate", "each item as it is published"
        DAILY = "daily", "a daily summary"

    subscriber = models.ForeignKey(Subscriber, related_name="subscriptions", on_delete=models.CASCADE)
    kind = models.CharField(max_length=16, choices=Kind.choices)
    target = models.CharField(
        max_length=200, blank=True,
        help_text="The topic's or tag's or author's slug, the repository's owner/name; empty for The Wire and the blog.",
    )
    cadence = models.CharField(max_length=16, choices=Cadence.choices, default=Cadence.IMMEDIATE)
    daily_at = models.TimeField(
        default="08:00", help_text="When the daily summary is sent (in NEWSLETTERS_TIME_ZONE).",
    )
    created_at = models.DateTimeField(auto_now_add=True)
    confirmed_at = models.DateTimeField(
        null=True, blank=True,
        help_text="Set by the confirmation link; a follow without it is not mailed (double opt-in, also for a "
                  "follow added later by a confirmed subscriber: newsletters/subscribing.py).",
    )

    class Meta:
        constraints = [models.UniqueConstraint(fields=["subscriber", "kind", "target"], name="one_subscription_per_target")]
        indexes = [models.Index(fields=["kind", "target"], name="newsletters_follow_idx")]

    def __str__(self) -> str:
        return f"{self.get_kind_display()} {self.target}".strip()


class Suppression(models.Model):
    class Reason(models.TextChoices):
        BOUNCED = "bounced", "hard bounce"
        COMPLAINED = "complained", "spam complaint"
        REJECTED = "rejected", "refused by the provider"
        MANUAL = "manual", "added by an editor"

    email = models.EmailField(unique=True)
    reason = models.CharField(max_length=16, choices=Reason.choices)
    detail = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    objects = AddressQuerySet.as_manager()

    class Meta:
        indexes = [models.Index(Lower("email"), name="newsletters_suppression_lower")]

    def __str__(self) -> str:
        return self.email


class Message(models.Model):
    """One published item as an email. Exactly one of ``post_id``/``digest_id`` is set, unless ``is_test``."""

    post = models.ForeignKey("blog.Post", null=True, blank=True, related_name="+", on_delete=models.SET_NULL)
    digest = models.ForeignKey("digests.Digest", null=True, blank=True, related_name="+", on_delete=models.SET_NULL)
    subject = models.CharField(max_length=300)
    url = models.URLField(max_length=500, help_text="The item's page.")
    created_at = models.DateTimeField(default=timezone.now)
    fanned_out_at = models.DateTimeField(
        null=True, blank=True, help_text="When a delivery was written for every subscriber following the item.",
    )
    is_test = models.BooleanField(default=False)
    requested_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, related_name="+", on_delete=models.SET_NULL,
    )

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.UniqueConstraint(fields=["post"], name="one_message_per_post",
                                    condition=models.Q(is_test=False, post__isnull=False)),
            models.UniqueConstraint(fields=["digest"], name="one_message_per_digest",
                                    condition=models.Q(is_test=False, digest__isnull=False)),
        ]

    def __str__(self) -> str:
        return self.subject


class Delivery(models.Model):
    class State(models.TextChoices):
        HELD = "held", "held for a daily summary"
        QUEUED = "queued"
        SENDING = "sending"
        SENT = "sent"
        FAILED = "failed"
        BOUNCED = "bounced"
        SUPPRESSED = "suppressed", "not sent: address suppressed or unsubscribed"

    message = models.ForeignKey(Message, related_name="deliveries", on_delete=models.CASCADE)
    subscriber = models.ForeignKey(Subscriber, null=True, blank=True, related_name="deliveries", on_delete=models.CASCADE)
    email = models.EmailField(help_text="Where it went (tests to an editor have no subscriber).")
    state = models.CharField(max_length=12, choices=State.choices, default=State.QUEUED)
    due_at = models.DateTimeField(default=timezone.now, help_text="Not sent before this (a daily summary's time).")
    next_attempt_at = models.DateTimeField(default=timezone.now)
    leased_until = models.DateTimeField(null=True, blank=True)
    attempts = models.PositiveSmallIntegerField(default=0)
    in_summary = models.BooleanField(
        default=False, help_text="Sent within the subscriber's daily summary (held until due_at), not alone.",
    )
    sent_at = models.DateTimeField(null=True, blank=True)
    smtp_id = models.CharField(max_length=300, blank=True, help_text="The Message-ID header sent.")
    last_error = models.TextField(blank=True)

    class Meta:
        verbose_name_plural = "deliveries"
        constraints = [
            models.UniqueConstraint(
                fields=["message", "subscriber"], name="one_delivery_per_subscriber",
                condition=models.Q(subscriber__isnull=False),
            ),
        ]
        indexes = [
            models.Index(fields=["state", "next_attempt_at"], name="newsletters_due_idx",
                         condition=models.Q(state__in=["queued", "sending", "held"])),
            # A message's progress by state, and a sender's claim: its queued rows in id order, read from the
            # index with no sort (a claim sorted every queued row: 50 ms a batch at 60,000, bench/newsletters.py).
            models.Index(fields=["message", "state", "id"], name="newsletters_progress_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.message} → {self.email}"


class SubscriberImport(models.Model):
    """A CSV of subscribers uploaded in the admin and imported by a worker (``newsletters.imports``).

    The upload is kept here (``data``) so that any worker can read it, also after the one that began
    died; ``lines_done`` is how far it got: the rows up to that line are written, in the transaction
    that advanced it, so a worker taking over goes on from there and adds no one twice. The counts and
    the first bad lines are the report the admin shows while it runs and after. The file itself is
    emptied once imported: it is readers' personal data, and the subscribers it made are the record.
    """

    class State(models.TextChoices):
        QUEUED = "queued"
        RUNNING = "running"
        DONE = "done"
        FAILED = "failed"

    requested_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, related_name="+",
                                     on_delete=models.SET_NULL)
    filename = models.CharField(max_length=255, blank=True)
    consented = models.BooleanField(help_text="The importer stated the people consented: confirmed at once, no email.")
    data = models.BinaryField(help_text="The uploaded CSV (UTF-8), until it is imported.")
    state = models.CharField(max_length=8, choices=State.choices, default=State.QUEUED)
    created_at = models.DateTimeField(default=timezone.now)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    leased_until = models.DateTimeField(null=True, blank=True, help_text="A worker holds it until then.")
    lines_total = models.PositiveIntegerField(default=0)
    lines_done = models.PositiveIntegerField(default=0, help_text="Rows up to this line are written.")
    created = models.PositiveIntegerField(default=0)
    existing = models.PositiveIntegerField(default=0)
    suppressed = models.PositiveIntegerField(default=0)
    confirmations = models.PositiveIntegerField(default=0)
    invalid_count = models.PositiveIntegerField(default=0)
    invalid = models.JSONField(default=list, blank=True, help_text="The first bad lines: [line, reason] each.")
    error = models.TextField(blank=True)

    class Meta:
        ordering = ["-created_at", "-pk"]
        indexes = [models.Index(fields=["state", "leased_until"], name="newsletters_import_idx",
                                condition=models.Q(state__in=["queued", "running"]))]

    def __str__(self) -> str:
        return f"{self.filename or 'CSV'} ({self.created_at:%Y-%m-%d %H:%M})"

    @property
    def percent(self) -> int:
        if self.state == self.State.DONE:
            return 100
        return min(99, 100 * self.lines_done // self.lines_total) if self.lines_total else 0
