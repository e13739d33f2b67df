"""Celery tasks: thin wrappers taking ids (see outbound/delivery.py for the why of each).

``deliver_endpoint_task`` lives in delivery.py (its docstring says why) and is imported here so
that every process that loads the app's tasks registers it.
"""
from celery import shared_task

from . import delivery, events
from .delivery import deliver_endpoint_task

__all__ = ["deliver_endpoint_task", "sweep_outbound"]

TASK_OPTIONS = {"acks_late": True}


@shared_task(**TASK_OPTIONS)
def sweep_outbound() -> str:
    """Beat: announce scheduled content whose time has come, and re-enqueue overdue deliveries."""
    announced = events.announce_due()
    queued = delivery.sweep()
    return f"announced {announced}, queued {queued}"
