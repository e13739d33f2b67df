"""Celery tasks: thin wrappers taking ids (see outbound/delivery.py and outbound/outbox.py for the why of each).

``deliver_endpoint_task`` lives in delivery.py and ``announce_changes`` in outbox.py (their
docstrings say why); both are imported here so that every process that loads the app's tasks
registers them.
"""
from celery import shared_task

from . import delivery, outbox
from .delivery import deliver_endpoint_task
from .outbox import announce_changes

__all__ = ["announce_changes", "deliver_endpoint_task", "sweep_announcements", "sweep_outbound"]

TASK_OPTIONS = {"acks_late": True}


@shared_task(**TASK_OPTIONS)
def sweep_outbound() -> str:
    """Beat: announce scheduled content whose time has come, and re-enqueue overdue deliveries."""
    announced = outbox.announce_due()
    queued = delivery.sweep()
    return f"announced {announced}, queued {queued}"


@shared_task(**TASK_OPTIONS)
def sweep_announcements() -> int:
    """Beat, every ``OUTBOUND_ANNOUNCE_SWEEP_SECONDS``: announce what writes owe and no task announced
    (a writer killed after its commit, the broker down then, a worker killed holding the task)."""
    return outbox.sweep()
