"""Celery tasks of the images app: thin wrappers taking ids (``images.renditions`` does the work).

Uploads queue ``make_renditions`` after their commit (inline where tasks run inline: ``make run``).
Encoding is idempotent (``renditions.make``), so the sweep may re-queue a task that was lost --
a worker killed while encoding, the broker away at upload -- without harm.
"""
import datetime

from celery import shared_task
from django.conf import settings
from django.db import transaction
from django.utils import timezone

from publishing import queues

from . import renditions
from .models import Image

TASK_OPTIONS = {"acks_late": True, "ignore_result": True}
#: What a renditions task's id names (``publishing.queues``): the sweep looks for them in the queue.
RENDITIONS_WORK = "image-renditions"


@shared_task(**TASK_OPTIONS)
def make_renditions(image_id: int) -> bool:
    """Make the renditions of one image (gone meanwhile: nothing to do)."""
    image = Image.objects.filter(pk=image_id).first()
    return renditions.make(image) if image is not None else False


def queue_renditions(image_id: int) -> None:
    """Send ``make_renditions`` with an id the sweep recognises in the queue."""
    make_renditions.apply_async((image_id,), task_id=queues.task_id(RENDITIONS_WORK, image_id),
                                argsrepr=f"({image_id},)", kwargsrepr="{}")


def queue_renditions_on_commit(image_id: int) -> None:
    transaction.on_commit(lambda: queue_renditions(image_id))


@shared_task(**TASK_OPTIONS)
def sweep_renditions() -> int:
    """Beat: queue again the images still without renditions ``IMAGES_SWEEP_AFTER`` s after their upload,
    unless their task still waits in the queue."""
    due = timezone.now() - datetime.timedelta(seconds=settings.IMAGES_SWEEP_AFTER)
    overdue = list(Image.objects.filter(renditions=[], uploaded_at__lte=due).values_list("pk", flat=True)[:100])
    if not overdue:
        return 0
    in_queue = queues.waiting(make_renditions.app, RENDITIONS_WORK) or set()
    lost = [image_id for image_id in overdue if str(image_id) not in in_queue]
    for image_id in lost:
        queue_renditions(image_id)
    return len(lost)
