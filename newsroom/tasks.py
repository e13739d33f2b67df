"""Celery tasks of the newsroom: thin wrappers, scheduled by beat."""
from celery import shared_task

from . import retention


@shared_task(ignore_result=True)
def prune() -> dict[str, int]:
    """Beat, hourly: every retention rule (``newsroom.retention``); safe to run twice at once."""
    return retention.prune_all()
