"""Provider tracking webhooks (django-anymail's ``tracking`` signal): hard bounces and complaints
suppress an address for good.

A hard bounce, a spam complaint or a provider's rejection adds a ``Suppression`` (fan-out and
sending skip suppressed addresses) and marks the latest delivery sent there ``bounced`` (the
admin's per-message progress counts it). Soft bounces and deferrals change nothing: the
provider retries them, and a later hard bounce arrives as its own event.
"""
from django.db import IntegrityError, transaction
from email_validator import EmailNotValidError, validate_email

from .models import Delivery, Suppression

REASONS = {"bounced": Suppression.Reason.BOUNCED, "complained": Suppression.Reason.COMPLAINED,
           "rejected": Suppression.Reason.REJECTED}
#: Raw fields by which providers say a bounce was temporary though anymail reports it as "bounced".
SOFT = {("Type", "SoftBounce"), ("Type", "Transient"), ("Type", "DnsError"), ("severity", "temporary"),
        ("bounceType", "Transient")}


def normalised(address: str) -> str:
    try:
        return validate_email(address, check_deliverability=False).normalized
    except EmailNotValidError:
        return address.strip()


def is_soft(event) -> bool:
    raw = event.esp_event if isinstance(event.esp_event, dict) else {}
    return any(raw.get(name) == value for name, value in SOFT)


def on_tracking(sender, event, esp_name, **kwargs) -> None:
    """anymail's ``tracking`` receiver: suppress on a hard bounce, a complaint or a rejection."""
    reason = REASONS.get(event.event_type)
    if reason is None or not event.recipient or is_soft(event):
        return
    suppress(normalised(event.recipient), reason, f"{esp_name}: {event.description or event.reject_reason or ''}")


def suppress(email: str, reason: str, detail: str = "") -> None:
    try:
        with transaction.atomic():
            Suppression.objects.get_or_create(email=email, defaults={"reason": reason, "detail": detail[:2000]})
    except IntegrityError:  # the same bounce reported twice at once
        pass
    latest = Delivery.objects.filter(email=email, state=Delivery.State.SENT).order_by("-sent_at", "-id").first()
    if latest is not None:
        Delivery.objects.filter(pk=latest.pk).update(state=Delivery.State.BOUNCED, last_error=detail[:2000])
