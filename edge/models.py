"""Purges the edge still owes, kept in the database until every edge node confirmed them."""
from django.db import models
from django.utils import timezone


class PurgeQuerySet(models.QuerySet):
    def due(self, now=None):
        """Purges whose (next) attempt has come, oldest first."""
        return self.filter(next_attempt_at__lte=now or timezone.now()).order_by("next_attempt_at", "pk")

    def retried(self):
        """Purges that failed at least once and are still owed (the admin's "retried" filter, the newsroom's count)."""
        return self.filter(attempts__gt=0)


class Purge(models.Model):
    """One transaction's purge: written in the transaction that changed the pages, deleted once sent.

    Durable where a queued task is not: a Redis outage at commit, a worker killed while it
    held the task, an edge node down for an hour -- the row waits, and beat's sweep
    (``edge.tasks.sweep_purges``) sends every due row, merged, until the edge confirms it.
    The row carries no backend: the worker that sends it decides where it goes
    (``EDGE_PURGE_BACKEND``), so a maintenance shell or a cron job whose own settings know
    no edge still purges the one the topology's workers know (``edge.outbox``).
    """

    keys = models.JSONField(default=list, help_text="Surrogate keys to purge (docs/deployment.md, “Edge contract”).")
    targets = models.JSONField(
        null=True, blank=True,
        help_text="The edge nodes still to purge after a partial failure; empty means every node.")
    created_at = models.DateTimeField(default=timezone.now, editable=False)
    next_attempt_at = models.DateTimeField(default=timezone.now, db_index=True)
    attempts = models.PositiveIntegerField(default=0, help_text="Failed attempts so far.")
    last_error = models.CharField(max_length=500, blank=True, help_text="Which nodes failed last, and how.")

    objects = PurgeQuerySet.as_manager()

    class Meta:
        ordering = ["next_attempt_at", "pk"]
        verbose_name = "pending edge purge"

    def __str__(self) -> str:
        return f"Purge of {len(self.keys)} key(s) from {self.created_at:%Y-%m-%d %H:%M:%S}"
