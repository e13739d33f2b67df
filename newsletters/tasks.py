"""Celery tasks: thin wrappers taking ids (the modules they call say why).

Every one is safe to run twice and to lose: the beat sweep (``sweep_newsletters``) finds from the
database what is still owed — items published without a message, confirmations not sent, deliveries
due or held by a worker that died — and queues it again. Queuing lives here, never in the modules
these tasks call (they would import this module, and it imports them).
"""
from celery import shared_task

from publishing import queues

from . import confirmations, fanout, imports, sending

TASK_OPTIONS = {"acks_late": True}
#: The id prefix of send_message tasks (``publishing.queues``): which still wait is read by that.
SEND_WORK = "newsletter-send"
#: The id prefixes of the confirmations' batch sender and of the CSV imports.
CONFIRM_WORK = "newsletter-confirmations"
IMPORT_WORK = "newsletter-import"


@shared_task(**TASK_OPTIONS)
def send_confirmation(subscriber_id: int) -> bool:
    return confirmations.send(subscriber_id)


@shared_task(**TASK_OPTIONS)
def send_confirmations() -> int:
    """The confirmations owed in bulk (an import's), in batches over one SMTP connection each."""
    return confirmations.send_owed()


@shared_task(**TASK_OPTIONS)
def import_subscribers(import_id: int) -> str:
    """A CSV import uploaded in the admin; the confirmations it owes are queued as it writes them."""
    return imports.run(import_id, on_batch=queue_confirmations)


@shared_task(**TASK_OPTIONS)
def mail_published() -> int:
    """Write a message, and its deliveries, for each item published since the last run; queue their sending."""
    count = fanout.mail_published()
    queue_owed()
    return count


@shared_task(**TASK_OPTIONS)
def send_message(message_id: int) -> int:
    return sending.send_due(message_id=message_id)


@shared_task(**TASK_OPTIONS)
def sweep_newsletters() -> str:
    """Beat: what is owed and was lost (a worker killed, Redis restarted) is queued again."""
    confirmed = confirmations.sweep()
    if confirmed:
        queue_confirmations()
    published = fanout.mail_published()
    swept = sending.sweep()
    return (f"confirmations {confirmed}, messages {published}, {swept}, sends queued {queue_owed()}, "
            f"imports queued {queue_imports()}")


def queue_owed() -> int:
    """Queue send_message for each message with due deliveries, unless its task already waits."""
    owed = sending.owed(queues.waiting(send_message.app, SEND_WORK) or set())
    return sum(queues.queue_or_leave_to_sweep(send_message, message_id, task_id=queues.task_id(SEND_WORK, message_id))
               for message_id in owed)


def queue_confirmations() -> bool:
    """Queue send_confirmations unless one already waits (one sends them all, batch after batch)."""
    if "all" in (queues.waiting(send_confirmations.app, CONFIRM_WORK) or set()):
        return False
    return queues.queue_or_leave_to_sweep(send_confirmations, task_id=queues.task_id(CONFIRM_WORK, "all"))


def queue_import(import_id: int) -> bool:
    return queues.queue_or_leave_to_sweep(import_subscribers, import_id, task_id=queues.task_id(IMPORT_WORK, import_id))


def queue_imports() -> int:
    """Queue each import left waiting or held by a worker that died, unless its task already waits."""
    waiting = queues.waiting(import_subscribers.app, IMPORT_WORK) or set()
    return sum(queue_import(pk) for pk in imports.stalled() if str(pk) not in waiting)
