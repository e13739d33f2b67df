"""Retention: each table that only grows has a rule, a setting and beat's hourly prune (issue 28).

A rule names the rows that have served their purpose -- older than the setting's number of
days *and* needed by no open problem -- and what pruning does to them: webhook deliveries lose
their stored bodies first (``RETENTION_WEBHOOK_BODY_DAYS``) and their rows later; ingestion
runs, redelivery requests, outbound messages (with their deliveries and attempts) and the
sign-in failure and access logs (django-axes) are deleted; a language model's raw answer to a
draft (``DigestDraft.raw_response``, issue 36) is emptied; an editor's autosave nobody came back
to (``editing.Autosave``, issue 37) is deleted. Never pruned: a delivery not yet
processed or failed (the newsroom's *Needs attention* and "Reprocess" need it), a running
ingestion run, an outbound message that some endpoint has not acknowledged, and the newest
message about each post or digest (later events compare with what it said). Edge purges need
no rule: a purge row is deleted once the edge confirms it.

``prune`` works in batches of ``BATCH`` rows, each in a short transaction of its own (no long
locks), and re-checks the rule inside the batch's statement, so two prunes at once (beat's while
an operator runs ``manage.py prune``) delete each row once and never one that became needed.
"""
import datetime
from dataclasses import dataclass
from typing import Callable

from axes.models import AccessFailureLog, AccessLog
from django.conf import settings
from django.db import transaction
from django.db.models import Exists, OuterRef, Q, QuerySet
from django.utils import timezone

from editing.models import Autosave
from ingestion.models import DigestDraft, IngestionRun, RedeliveryRequest, WebhookDelivery
from outbound.models import Delivery, Message

#: Rows pruned per transaction.
BATCH = 500
DONE = [WebhookDelivery.State.PROCESSED, WebhookDelivery.State.IGNORED]


@dataclass(frozen=True)
class Rule:
    name: str
    model: type
    setting: str
    keeps: str  # what the rule never prunes, for the admin and the docs
    due: Callable[[datetime.datetime], QuerySet]  # the rows past `cutoff` no open problem needs
    clear: dict | None = None  # fields to empty instead of deleting the row

    @property
    def days(self) -> int:
        return getattr(settings, self.setting)

    def cutoff(self, now: datetime.datetime) -> datetime.datetime:
        return now - datetime.timedelta(days=self.days)

    @property
    def action(self) -> str:
        return f"empties {', '.join(self.clear)}" if self.clear else "deletes the row"


def _settled_messages(cutoff):
    """Messages every endpoint acknowledged (or none was sent), with a newer message about their subject."""
    unacknowledged = Delivery.objects.filter(message=OuterRef("pk")).exclude(state=Delivery.State.SUCCEEDED)
    newer = Message.objects.filter(subject_type=OuterRef("subject_type"), subject_id=OuterRef("subject_id"),
                                   pk__gt=OuterRef("pk"))
    return Message.objects.filter(created_at__lt=cutoff).filter(~Exists(unacknowledged)).filter(
        Q(subject_type="") | Exists(newer))


RULES = [
    Rule("webhook delivery bodies", WebhookDelivery, "RETENTION_WEBHOOK_BODY_DAYS",
         "deliveries pending or failed (they may be reprocessed)",
         lambda cutoff: WebhookDelivery.objects.filter(state__in=DONE, received_at__lt=cutoff).exclude(body=b""),
         clear={"body": b""}),
    Rule("webhook deliveries", WebhookDelivery, "RETENTION_WEBHOOK_DELIVERY_DAYS",
         "deliveries pending or failed",
         lambda cutoff: WebhookDelivery.objects.filter(state__in=DONE, received_at__lt=cutoff)),
    Rule("ingestion runs", IngestionRun, "RETENTION_INGESTION_RUN_DAYS", "runs still running",
         lambda cutoff: IngestionRun.objects.filter(started_at__lt=cutoff).exclude(
             status=IngestionRun.Status.RUNNING)),
    Rule("redelivery requests", RedeliveryRequest, "RETENTION_REDELIVERY_REQUEST_DAYS",
         "nothing older (GitHub redelivers within hours)",
         lambda cutoff: RedeliveryRequest.objects.filter(requested_at__lt=cutoff)),
    Rule("outbound messages", Message, "RETENTION_OUTBOUND_MESSAGE_DAYS",
         "messages an endpoint has not acknowledged, and the newest about each post or digest",
         _settled_messages),
    Rule("model draft answers", DigestDraft, "RETENTION_DRAFT_RESPONSE_DAYS",
         "the answer of a draft generated since (a redraft of an unchanged day reuses it)",
         lambda cutoff: DigestDraft.objects.filter(generated_at__lt=cutoff).exclude(raw_response=""),
         clear={"raw_response": ""}),
    Rule("abandoned autosaves", Autosave, "RETENTION_AUTOSAVE_DAYS",
         "unsaved changes an editor touched since (a save or a discard removes them at once)",
         lambda cutoff: Autosave.objects.abandoned(cutoff)),
    Rule("sign-in failures", AccessFailureLog, "RETENTION_SIGN_IN_FAILURE_DAYS",
         "nothing older (lockouts count from AccessAttempt, not from this log)",
         lambda cutoff: AccessFailureLog.objects.filter(attempt_time__lt=cutoff)),
    Rule("sign-in access log", AccessLog, "RETENTION_ACCESS_LOG_DAYS", "nothing older",
         lambda cutoff: AccessLog.objects.filter(attempt_time__lt=cutoff)),
]


def prune(rule: Rule, now: datetime.datetime | None = None, *, dry_run: bool = False) -> int:
    """Prune what `rule` names at `now` (default: now), in batches; returns how many rows it pruned
    (with `dry_run`, how many it would prune, touching nothing)."""
    cutoff = rule.cutoff(now or timezone.now())
    if dry_run:
        return rule.due(cutoff).count()
    pruned = 0
    while ids := list(rule.due(cutoff).order_by("pk").values_list("pk", flat=True)[:BATCH]):
        with transaction.atomic():
            batch = rule.due(cutoff).filter(pk__in=ids)  # the rule again: a row needed meanwhile stays
            pruned += batch.update(**rule.clear) if rule.clear else _delete(batch)
    return pruned


def _delete(batch: QuerySet) -> int:
    """Delete `batch` (with what cascades from it); the count of the batch's own rows."""
    return batch.delete()[1].get(batch.model._meta.label, 0)


def prune_all(now: datetime.datetime | None = None, *, dry_run: bool = False) -> dict[str, int]:
    """Every rule in turn; its result recorded (``PruneRecord``) unless `dry_run`."""
    from .models import PruneRecord

    results = {}
    for rule in RULES:
        started = timezone.now()
        results[rule.name] = prune(rule, now, dry_run=dry_run)
        if not dry_run:
            PruneRecord.objects.update_or_create(rule=rule.name, defaults={
                "last_started_at": started, "last_finished_at": timezone.now(), "last_pruned": results[rule.name]})
    return results
