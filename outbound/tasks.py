"""Celery tasks: thin wrappers taking ids (see outbound/delivery.py for the why of each)."""
from celery import shared_task

from . import delivery, events

TASK_OPTIONS = {"acks_late": True}


@shared_task(**TASK_OPTIONS)
def deliver_endpoint_task(endpoint_id: int) -> int:
    """Deliver an endpoint's due messages in order; the attempts record their own failures, so no retry here."""
    return delivery.deliver_due(endpoint_id)


@shared_task(**TASK_OPTIONS)
def sweep_outbound() -> str:
    """Beat: announce scheduled content whose time has come, and re-enqueue overdue deliveries."""
    announced = events.announce_due()
    queued = delivery.sweep()
    return f"announced {announced}, queued {queued}"
