"""Queueing a task from the admin: after the admin's transaction commits, a broker outage logged, not a 500."""
import logging

from django.db import transaction

logger = logging.getLogger("ingestion.admin")


def send_after_commit(task, *args, **kwargs) -> None:
    """Queue ``task`` once the admin's transaction commits; a broker outage is logged, not a 500."""

    def send():
        try:
            task.delay(*args, **kwargs)
        except Exception:
            logger.exception("Could not queue %s%r", task.name, args)

    transaction.on_commit(send)
