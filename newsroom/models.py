"""What the newsroom stores of its own: when each retention rule last ran (``newsroom.retention``)."""
from django.db import models


class PruneRecord(models.Model):
    """One retention rule's last run: the admin shows it beside the rule (``newsroom.admin``)."""

    rule = models.CharField(max_length=100, unique=True)
    last_started_at = models.DateTimeField(null=True, blank=True)
    last_finished_at = models.DateTimeField(null=True, blank=True, help_text="Empty: the rule has not run yet.")
    last_pruned = models.PositiveIntegerField(
        null=True, blank=True, help_text="Rows pruned (deleted, or their bodies emptied) by that run.")

    class Meta:
        ordering = ["rule"]
        verbose_name = "retention rule"

    def __str__(self) -> str:
        return self.rule
