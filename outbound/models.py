"""Outbound webhooks: who wants to hear of published content, what was said, and every try.

An `Endpoint` is a subscriber's URL with its signing secret. A `Message` is one event
(``post.published`` …), written once and sent to every endpoint that wants its type. A
`Delivery` is one message on its way to one endpoint: it is what makes delivery durable
(``next_attempt_at`` lives in the database, so a due retry survives a worker or Redis restart:
the beat sweep re-enqueues it) and what keeps a message from being delivered twice after a 2xx
(one row per endpoint and message, locked while it is tried). An `Attempt` is one HTTP request,
kept for the log an editor reads in the admin. An `Announcement` is an item owed a comparison
with what subscribers were told: written in the writing transaction, announced by a worker
(``outbound.outbox``).
"""
import base64
import secrets
from datetime import timedelta

from django.conf import settings
from django.db import models
from django.utils import timezone

#: Every event an endpoint can ask for ("webhook.test" is only ever sent by the admin's test action).
EVENT_TYPES = [
    "post.published", "post.updated", "post.unpublished",
    "digest.published", "digest.updated", "digest.unpublished",
]
TEST_EVENT = "webhook.test"
SECRET_PREFIX = "whsec_"
#: How long a rotated-out secret still signs, so subscribers can switch without losing messages.
PREVIOUS_SECRET_LIFETIME = timedelta(hours=24)


def new_secret() -> str:
    """24 random bytes, base64 (the ``whsec_`` form without its prefix), as the specification suggests."""
    return base64.b64encode(secrets.token_bytes(24)).decode()


def new_message_id() -> str:
    return f"msg_{secrets.token_urlsafe(18)}"


class EndpointQuerySet(models.QuerySet):
    def wanting(self, event_type: str):
        """Enabled endpoints subscribed to `event_type` (an empty list of event types means all of them).

        Decided in Python: endpoints are few, and SQLite's JSON has no containment lookup."""
        pks = [pk for pk, types in self.filter(enabled=True).values_list("pk", "event_types")
               if not types or event_type in types]
        return self.filter(pk__in=pks)

    def failing(self):
        """Enabled endpoints failing since their last success (still retried; disabled after 5 days)."""
        return self.filter(enabled=True, failing_since__isnull=False)

    def owned_by(self, user):
        return self.filter(owner=user)

    def with_head_due(self, now):
        """Enabled endpoints whose oldest pending delivery is due by `now`: only the head is ever tried,
        so a due message waiting behind one that is not does not count."""
        head = Delivery.objects.filter(endpoint=models.OuterRef("pk"), state=Delivery.State.PENDING)
        head_due = models.Subquery(head.order_by("message_id").values("next_attempt_at")[:1])
        return self.filter(enabled=True).annotate(head_due=head_due).filter(head_due__lte=now)


class Endpoint(models.Model):
    """A subscriber's URL. Its secret signs every request; the previous one still signs for 24 h after a rotation."""

    url = models.URLField(max_length=500, help_text="Where events are POSTed. https only in production; "
                                                    "never a loopback, private or link-local address.")
    description = models.CharField(max_length=200, blank=True)
    event_types = models.JSONField(default=list, blank=True,
                                   help_text="The events this endpoint wants; empty means every event.")
    enabled = models.BooleanField(default=True, help_text="Disabled endpoints get nothing; their pending "
                                                          "messages wait and go out, in order, once re-enabled.")
    secret = models.CharField(max_length=100, default=new_secret, editable=False)
    previous_secret = models.CharField(max_length=100, blank=True, editable=False)
    previous_secret_expires_at = models.DateTimeField(null=True, blank=True, editable=False)
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.CASCADE,
                              related_name="webhook_endpoints",
                              help_text="The user whose API token manages this endpoint (empty: admin only).")
    disabled_reason = models.CharField(max_length=300, blank=True,
                                       help_text="Why delivery disabled this endpoint (410 Gone, or 5 days failing).")
    failing_since = models.DateTimeField(null=True, blank=True, editable=False,
                                         help_text="The first failure since the last success.")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    objects = EndpointQuerySet.as_manager()

    class Meta:
        ordering = ["pk"]

    def __str__(self) -> str:
        return self.url

    @property
    def whsec(self) -> str:
        """The secret as subscribers paste it into a Standard Webhooks verifier."""
        return SECRET_PREFIX + self.secret

    def signing_secrets(self, now=None) -> list[str]:
        """The current secret, and the previous one while it is still within its 24 h."""
        now = now or timezone.now()
        found = [self.secret]
        if self.previous_secret and self.previous_secret_expires_at and self.previous_secret_expires_at > now:
            found.append(self.previous_secret)
        return found

    def rotate_secret(self, now=None) -> str:
        """A new secret; the old one keeps signing for 24 h. Returns the new one in ``whsec_`` form."""
        now = now or timezone.now()
        self.previous_secret, self.secret = self.secret, new_secret()
        self.previous_secret_expires_at = now + PREVIOUS_SECRET_LIFETIME
        self.save(update_fields=["secret", "previous_secret", "previous_secret_expires_at", "updated_at"])
        return self.whsec

    def disable(self, reason: str) -> None:
        self.enabled = False
        self.disabled_reason = reason[:300]
        self.save(update_fields=["enabled", "disabled_reason", "updated_at"])

    def success_rate(self, last: int = 50) -> float | None:
        """The share of the last `last` attempts that got a 2xx (None before the first attempt)."""
        statuses = list(self.attempts.order_by("-pk").values_list("succeeded", flat=True)[:last])
        return sum(statuses) / len(statuses) if statuses else None


class Message(models.Model):
    """One event, as sent: its id (``msg_…``, the ``webhook-id`` header) and its exact JSON body."""

    msg_id = models.CharField(max_length=40, unique=True, default=new_message_id, editable=False)
    type = models.CharField(max_length=40, db_index=True)
    payload = models.JSONField()
    #: What the event is about ("post" / "digest" and its pk): how later events find what was said last.
    subject_type = models.CharField(max_length=20, blank=True)
    subject_id = models.BigIntegerField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now, db_index=True)

    class Meta:
        ordering = ["-pk"]
        indexes = [models.Index(fields=["subject_type", "subject_id", "-id"], name="outbound_msg_subject")]

    def __str__(self) -> str:
        return f"{self.type} {self.msg_id}"


class DeliveryQuerySet(models.QuerySet):
    def pending(self):
        return self.filter(state=Delivery.State.PENDING)


class Delivery(models.Model):
    """One message on its way to one endpoint; unique, so a 2xx is recorded once and never repeated."""

    class State(models.TextChoices):
        PENDING = "pending", "Pending"
        SUCCEEDED = "succeeded", "Succeeded"
        FAILED = "failed", "Failed (gave up after the last retry)"

    endpoint = models.ForeignKey(Endpoint, on_delete=models.CASCADE, related_name="deliveries")
    message = models.ForeignKey(Message, on_delete=models.CASCADE, related_name="deliveries")
    state = models.CharField(max_length=10, choices=State.choices, default=State.PENDING)
    attempt_count = models.PositiveSmallIntegerField(default=0)
    next_attempt_at = models.DateTimeField(null=True, blank=True, default=timezone.now)
    succeeded_at = models.DateTimeField(null=True, blank=True)

    objects = DeliveryQuerySet.as_manager()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["endpoint", "message"], name="outbound_one_delivery")]
        indexes = [models.Index(fields=["endpoint", "state", "message"], name="outbound_delivery_queue")]
        verbose_name_plural = "deliveries"

    def __str__(self) -> str:
        return f"{self.message} → {self.endpoint}"


class Attempt(models.Model):
    """One HTTP request: what the endpoint answered (status, the start of its body) or the network error."""

    endpoint = models.ForeignKey(Endpoint, on_delete=models.CASCADE, related_name="attempts")
    message = models.ForeignKey(Message, on_delete=models.CASCADE, related_name="attempts")
    number = models.PositiveSmallIntegerField(help_text="1 for the first try of this message to this endpoint.")
    status_code = models.PositiveSmallIntegerField(null=True, blank=True)
    response_excerpt = models.CharField(max_length=1000, blank=True)
    error = models.CharField(max_length=500, blank=True)
    duration_ms = models.PositiveIntegerField(default=0)
    succeeded = models.BooleanField(default=False)
    attempted_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-pk"]

    def __str__(self) -> str:
        outcome = self.status_code or self.error or "?"
        return f"#{self.number} {self.message.type} → {outcome}"


class Announcement(models.Model):
    """An item whose public state may have changed: compared with what subscribers were told, by a worker.

    Written in the transaction of the write (a rolled-back write owes nothing), so a process killed
    between its commit and the announcement, or a broker down at that moment, loses nothing: beat's
    sweep (``outbound.tasks.sweep_announcements``) announces what the commit's task did not. Deleted in
    the transaction that writes the `Message` (or decides none is due), so it is announced once.
    """

    subject_type = models.CharField(max_length=20)
    subject_id = models.BigIntegerField()
    was_public = models.BooleanField(
        null=True, blank=True,
        help_text="Whether readers saw the item before the save that wrote this row (false: the save may "
                  "publish it); empty for a change to what a public item shows, which publishes nothing.")
    last_data = models.JSONField(null=True, blank=True,
                                 help_text="A deleted item's last public JSON, for its ``*.unpublished``.")
    created_at = models.DateTimeField(default=timezone.now, db_index=True)

    class Meta:
        ordering = ["pk"]
        indexes = [models.Index(fields=["subject_type", "subject_id"], name="outbound_announcement_subject")]
        verbose_name = "pending announcement"

    def __str__(self) -> str:
        return f"{self.subject_type} {self.subject_id} owed an announcement since {self.created_at:%Y-%m-%d %H:%M:%S}"
