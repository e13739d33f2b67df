"""Connected in NewslettersConfig.ready: publishing saves start a fan-out, provider webhooks suppress, owed confirmations are queued.

A saved post or digest that is published queues ``mail_published`` once the write commits (its
tags, authors and citations are then in place). It is cheap when nothing is due, and it is not
what guarantees delivery: the beat sweep runs the same fan-out, which is how a scheduled item is
mailed when its time comes (no write happens then) and how a lost task is made up for.
"""
from anymail.signals import tracking
from django.db import transaction
from django.db.models.signals import post_save

from blog.models import Post
from digests.models import Digest
from publishing.queues import queue_or_leave_to_sweep
from publishing.workflow import Status

from . import confirmations, tracking as bounces


def on_published_save(sender, instance, **kwargs) -> None:
    if instance.status == Status.PUBLISHED and instance.is_published:
        transaction.on_commit(_queue_fan_out)


def _queue_fan_out() -> None:
    from .tasks import mail_published  # the tasks module imports fanout, which imports content models

    queue_or_leave_to_sweep(mail_published)


def _queue_confirmation(sender, subscriber_id: int, **kwargs) -> None:
    from .tasks import send_confirmation  # tasks imports confirmations, which sends this signal

    queue_or_leave_to_sweep(send_confirmation, subscriber_id)


def connect_signals() -> None:
    for model in (Post, Digest):
        post_save.connect(on_published_save, sender=model, dispatch_uid=f"newsletters-published-{model.__name__}")
    tracking.connect(bounces.on_tracking, dispatch_uid="newsletters-tracking")
    confirmations.confirmation_owed.connect(_queue_confirmation, dispatch_uid="newsletters-confirmation-owed")
