"""A repository's published merges per week, kept by the database: the repository page's chart.

Counting a busy repository's merges of the last 26 weeks read every one of them
on every cold request (~1,200 index entries for the benchmark's busiest
repository); the tally reads about one row per week. PostgreSQL keeps it (the
triggers of migration 0016); SQLite, the development database, has none and the
chart counts there live (``Reference.objects.merged_weeks``).
"""
import datetime

from django.db import connections, models, router
from django.utils import timezone

#: The zone whose weeks the tally counts in. A chart in any other zone counts live.
TALLY_TIME_ZONES = ("UTC", "Etc/UTC")
#: Changes fold once in effect this long: the folded row counts from the latest of them, so a
#: reader whose clock is up to this far behind the folding worker's still sees every one.
FOLD_AFTER = datetime.timedelta(minutes=10)

FOLD = """
WITH folded AS (
    DELETE FROM digests_mergetally WHERE counted_from <= %(now)s AND (repository_id, week) IN (
        SELECT repository_id, week FROM digests_mergetally WHERE counted_from <= %(now)s
        GROUP BY repository_id, week HAVING count(*) > 1
    )
    RETURNING repository_id, week, counted_from, merged
)
INSERT INTO digests_mergetally (repository_id, week, counted_from, merged)
SELECT repository_id, week, max(counted_from), sum(merged) FROM folded
GROUP BY repository_id, week HAVING sum(merged) <> 0
"""


def tallied_here(using: str = "default") -> bool:
    """Whether this database keeps the tally and the current time zone's weeks are the tally's."""
    return connections[using].vendor == "postgresql" and timezone.get_current_timezone_name() in TALLY_TIME_ZONES


class MergeTallyQuerySet(models.QuerySet):
    def counted(self, now):
        """The changes in effect at `now`: a scheduled digest's references count from its time."""
        return self.filter(counted_from__lte=now)

    def weekly_totals(self):
        """``{"week": Monday, "total": merged count}``, one per week with a row, oldest first."""
        return self.order_by().values("week").annotate(total=models.Sum("merged")).order_by("week")

    def fold(self, now=None) -> int:
        """Sum each repository's and week's changes in effect ``FOLD_AFTER`` before `now` into one row,
        counted from the latest of them; returns the rows written.

        The triggers only ever insert (so publishing never waits on another
        publish for a shared counter row), and this keeps the rows a chart
        reads to about one per week; a week already down to one row is left
        alone. One statement: a fold that dies leaves everything as it was, and
        two at once fold each row once (the second skips the rows the first
        deleted). Changes not yet in effect (a scheduled digest's) stay as they
        are until their time has come.
        """
        using = router.db_for_write(self.model)
        if connections[using].vendor != "postgresql":
            return 0
        with connections[using].cursor() as cursor:
            cursor.execute(FOLD, {"now": (timezone.now() if now is None else now) - FOLD_AFTER})
            return cursor.rowcount


class MergeTally(models.Model):
    """A signed change to the number of a repository's published merges in one week (UTC).

    A reference counts once it is merged and cited by a published digest, from
    that digest's publication time (``Reference.first_published_at``); the
    database adds +1 and -1 rows as references are published, withdrawn, moved
    or re-dated, and ``fold`` sums them. Never written by the application.
    """

    repository = models.ForeignKey(
        "digests.Repository", on_delete=models.DO_NOTHING, db_constraint=False, related_name="+",
        help_text="Not a constraint: a repository's deletion withdraws its references, which writes "
                  "the rows that cancel its counts.",
    )
    week = models.DateField(help_text="The Monday, in UTC, of the week the references were merged in.")
    counted_from = models.DateTimeField(help_text="When the change takes effect: the publication time.")
    merged = models.IntegerField(help_text="How many merges this adds (negative: removes).")

    objects = MergeTallyQuerySet.as_manager()

    class Meta:
        indexes = [
            models.Index(fields=["repository", "week"], include=["counted_from", "merged"],
                         name="mergetally_repository_week"),
        ]

    def __str__(self) -> str:
        return f"{self.repository_id} {self.week}: {self.merged:+d} from {self.counted_from:%Y-%m-%d %H:%M}"
