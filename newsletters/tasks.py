"""Celery tasks: thin wrappers taking ids (the modules they call say why).

Every one is safe to run twice and to lose: the beat sweep (``sweep_newsletters``) finds from the
database what is still owed — items published without a message, confirmations not sent, deliveries
due or held by a worker that died — and queues it again.
"""
from celery import shared_task

from . import confirmations, fanout, sending

TASK_OPTIONS = {"acks_late": True}


@shared_task(**TASK_OPTIONS)
def send_confirmation(subscriber_id: int) -> bool:
    return confirmations.send(subscriber_id)


@shared_task(**TASK_OPTIONS)
def mail_published() -> int:
    """Write a message, and its deliveries, for each item published since the last run."""
    return fanout.mail_published()


@shared_task(**TASK_OPTIONS)
def send_message(message_id: int) -> int:
    return sending.send_due(message_id=message_id)


@shared_task(**TASK_OPTIONS)
def sweep_newsletters() -> str:
    """Beat: what is owed and was lost (a worker killed, Redis restarted) is queued again."""
    confirmed = confirmations.sweep()
    published = fanout.mail_published()
    return f"confirmations {confirmed}, messages {published}, {sending.sweep()}"
