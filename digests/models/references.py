"""References: the pieces of repository activity a digest can cite."""
import datetime

from django.db import models, router, transaction
from django.db.models.functions import TruncWeek
from django.utils import timezone

from publishing.rendering import render_github_markdown

from .. import cards
from .topics import Repository, Topic, digest_model


def chart_start(weeks: int, today: "datetime.date | None" = None) -> "datetime.date":
    """The Monday `weeks` - 1 weeks before this week's: the first week of a chart of `weeks` weeks."""
    today = today or timezone.localdate()
    return today - datetime.timedelta(days=today.weekday(), weeks=weeks - 1)


def week_start(monday: "datetime.date") -> "datetime.datetime":
    """Midnight starting `monday`, in the current time zone."""
    return timezone.make_aware(datetime.datetime.combine(monday, datetime.time.min))


def every_week(rows, first_monday: "datetime.date", weeks: int) -> list[tuple["datetime.date", int]]:
    """``merged_weeks`` rows as one ``(Monday, count)`` per week from `first_monday`, zeros included."""
    counts = dict.fromkeys((first_monday + datetime.timedelta(weeks=i) for i in range(weeks)), 0)
    for week, merged in rows:
        if week in counts:
            counts[week] = merged
    return list(counts.items())


def week_bounds(first_monday: "datetime.date", weeks: int) -> list["datetime.datetime"]:
    """Midnight, in the current time zone, of the `weeks` Mondays from `first_monday` and of the next one.

    The edges ``merged_in_weeks`` counts between: made here, in the zone's own
    calendar, a week across a daylight-saving change is as long as it is there.
    """
    zone = timezone.get_current_timezone()  # a zoneinfo zone: attaching it is make_aware's whole work
    return [datetime.datetime.combine(first_monday + datetime.timedelta(weeks=week), datetime.time.min, zone)
            for week in range(weeks + 1)]


def timestamp_array(moments: list["datetime.datetime"]) -> str:
    """PostgreSQL's text form of a ``timestamptz[]`` (ISO 8601 elements need no quoting)."""
    return "{" + ",".join(moment.isoformat() for moment in moments) + "}"


def bucket_weeks(rows, first_monday: "datetime.date", weeks: int) -> list[tuple["datetime.date", int]]:
    """``merged_in_weeks`` rows as ``merged_weeks`` gives them: ``(Monday, count)``, in no order.

    Bucket *n* (1-based, as ``width_bucket`` numbers them) is the *n*-th week;
    merges dated after the last week (bucket ``weeks + 1``) are not charted.
    """
    return [(first_monday + datetime.timedelta(weeks=bucket - 1), merged)
            for bucket, merged in rows if 1 <= bucket <= weeks]


class WidthBucket(models.Func):
    """PostgreSQL's ``width_bucket(value, bounds)``: which of the ascending `bounds` (a ``timestamptz[]``
    in text form) `value` follows -- 0 before the first, ``len(bounds)`` after the last."""

    function = "width_bucket"
    template = "%(function)s(%(expressions)s::timestamptz[])"
    output_field = models.IntegerField()


class ReferenceQuerySet(models.QuerySet):
    def published(self, now=None):
        """References cited by at least one published digest.

        Raw GitHub activity only becomes RepoJournal content once a published
        digest cites it; until then it is as private as the draft citing it.
        Read from ``first_published_at``, which the database keeps (see the
        field), so a repository's page walks one partial index instead of
        joining every published digest's citations; a scheduled digest's
        references go public on the minute, like the digest, as the comparison
        with now is made at query time.
        """
        return self.filter(first_published_at__lte=timezone.now() if now is None else now)

    def merged_per_week(self, weeks: int, *, today=None) -> list[tuple["datetime.date", int]]:
        """Count merged items per week (weeks start on Monday), oldest first, zeros included.

        One aggregate query (``merged_weeks``): the database truncates each
        ``merged_at`` to its week and counts per week, so a busy repository's
        thousands of dates never reach Python (reading them cost its page ~35 ms).
        """
        first_monday = chart_start(weeks, today)
        return every_week(self.merged_weeks(week_start(first_monday)), first_monday, weeks)

    def merged_weeks(self, since: "datetime.datetime"):
        """``(Monday, merged count)`` rows for the weeks with merges since `since`, in no order.

        ``TruncWeek`` in the current time zone, on SQLite as on PostgreSQL.
        """
        return (
            self.filter(merged_at__gte=since).order_by()
            .annotate(week=TruncWeek("merged_at", output_field=models.DateField()))
            .values("week").annotate(merged=models.Count("pk")).values_list("week", "merged")
        )

    def merged_in_weeks(self, since: "datetime.datetime", bounds: str):
        """PostgreSQL: ``(week number, merged count)`` rows for the weeks with merges since `since`.

        What ``merged_weeks`` counts (``bucket_weeks`` turns the rows into
        Mondays) for about half its cost: a binary search among the weeks'
        edges (`bounds`: ``timestamp_array(week_bounds(...))``, whose first is
        `since`), made in Python in the current time zone, instead of converting
        and truncating every merge's time. A busy repository has thousands.
        """
        return (
            self.filter(merged_at__gte=since).order_by()
            .annotate(week=WidthBucket("merged_at", models.Value(bounds)))
            .values("week").annotate(merged=models.Count("pk")).values_list("week", "merged")
        )

    def upsert(self, repository: Repository, kind: str, key: str, **fields):
        """Create or update the reference with this natural key.

        Returns ``(reference, outcome)`` where outcome is "created", "updated" or
        "unchanged"; an unchanged row is not written, so re-running an import is
        free and leaves ``updated_at`` alone.
        """
        reference = self.filter(repository=repository, kind=kind, key=key).first()
        if reference is None:
            return self.create(repository=repository, kind=kind, key=key, **fields), "created"
        changed = {name: value for name, value in fields.items() if getattr(reference, name) != value}
        if not changed:
            return reference, "unchanged"
        for name, value in changed.items():
            setattr(reference, name, value)
        reference.save()
        return reference, "updated"

    def upsert_many(self, repository: Repository, kind: str, rows: dict, *, skip=None) -> dict:
        """``upsert`` for a batch (a page of a GitHub listing) in a fixed number of queries.

        ``rows`` maps each key to its fields. One SELECT finds the existing rows
        (with whatever ``select_related`` the caller put on this queryset), one
        INSERT creates the new ones and one UPDATE writes the changed ones; an
        unchanged row is not written and keeps ``updated_at``, as with
        ``upsert``; on PostgreSQL the INSERT's column arrays are bound on the
        server (settings: ``server_side_binding``). Bulk writes skip ``save()`` and its signals, so
        Markdown is rendered here -- only for new or changed bodies -- and the caller
        invalidates the page cache. ``skip(reference, fields)`` may keep an
        existing row as it is (its outcome is then "skipped"). Returns
        ``{key: (reference, outcome)}``; created references have their ids.
        """
        existing = {
            ref.key: ref for ref in self.filter(repository=repository, kind=kind, key__in=list(rows)).order_by()
        }
        now, results, new, changed, written = timezone.now(), {}, [], [], {"updated_at"}
        for key, fields in rows.items():
            reference = existing.get(key)
            if reference is None:
                reference = self.model(repository=repository, kind=kind, key=key, **fields)
                reference.body_html = render_github_markdown(reference.body)
                new.append(reference)
                results[key] = (reference, "created")
                continue
            kept = bool(skip and skip(reference, fields))
            diff = {} if kept else {name: value for name, value in fields.items() if getattr(reference, name) != value}
            if not diff:
                results[key] = (reference, "skipped" if kept else "unchanged")
                continue
            for name, value in diff.items():
                setattr(reference, name, value)
            if "body" in diff:
                reference.body_html = render_github_markdown(reference.body)
                written.add("body_html")
            reference.updated_at = now
            written.update(diff)
            changed.append(reference)
            results[key] = (reference, "updated")
        using = self._db or router.db_for_write(self.model)
        if new:
            self.model._base_manager.db_manager(using).bulk_create(new)
        if changed:
            self.model._base_manager.db_manager(using).bulk_update(changed, sorted(written))
        return results

    def cited_by(self, digests, cited: bool = True):
        """References cited (or, with cited=False, not cited) by any of `digests`."""
        citing = digest_model("DigestReference").objects.filter(digest__in=digests).values("reference_id")
        return self.filter(pk__in=citing) if cited else self.exclude(pk__in=citing)


class Reference(models.Model):
    """One piece of repository activity a digest can cite.

    ``key`` is GitHub's own identity for the item within its repository and kind
    (the number of a pull request or issue, the SHA of a commit, the tag of a
    release), so every importer upserts on (repository, kind, key) and a re-import
    updates instead of duplicating. Items known only from a document, with no
    GitHub id, are keyed by their title.
    """

    class Kind(models.TextChoices):
        PULL_REQUEST = "pull_request", "Pull request"
        COMMIT = "commit", "Commit"
        RELEASE = "release", "Release"
        ISSUE = "issue", "Issue"

    repository = models.ForeignKey(Repository, related_name="references", on_delete=models.PROTECT)
    kind = models.CharField(max_length=20, choices=Kind.choices)
    key = models.CharField(
        max_length=200,
        help_text="GitHub's id within the repository: PR/issue number, commit SHA or release tag.",
    )
    number = models.PositiveIntegerField(
        null=True, blank=True, help_text="Pull request or issue number (for a commit: the PR it landed)."
    )
    sha = models.CharField("SHA", max_length=40, blank=True)
    title = models.CharField(max_length=500)
    url = models.URLField(max_length=500, blank=True)
    author_login = models.CharField(max_length=100, blank=True)
    co_authors = models.JSONField(
        default=list, blank=True, help_text="Names/logins from Co-authored-by: trailers, in order."
    )
    state = models.CharField(max_length=20, blank=True, help_text="open, closed, merged, published…")
    merged_at = models.DateTimeField(null=True, blank=True, db_index=True)
    labels = models.JSONField(default=list, blank=True)
    stats = models.JSONField(
        default=dict, blank=True,
        help_text="What GitHub reports of a pull request's size and attention: additions, deletions, "
                  "changed_files, reactions, reviewers, review_comments. Drafting ranks changes by it.",
    )
    body = models.TextField(blank=True, help_text="Raw Markdown from GitHub, written by strangers.")
    body_html = models.TextField(blank=True, editable=False)
    opened_at = models.DateTimeField(
        null=True, blank=True, help_text="When it was opened, authored or released on GitHub."
    )
    first_published_at = models.DateTimeField(
        null=True, blank=True, editable=False,
        help_text="The earliest publication time among the published digests citing it (scheduled ones "
                  "included); empty while no published digest cites it. Kept by the database itself "
                  "(triggers, migration 0014) on every change to citations and to a digest's status or "
                  "publication time; a value written here is replaced by the computed one.",
    )
    topic = models.ForeignKey(
        Topic, null=True, blank=True, editable=False, on_delete=models.DO_NOTHING, db_constraint=False,
        db_index=False, related_name="+",
        help_text="Its repository's topic, kept by the database itself (triggers, migration 0021) when a "
                  "reference is stored or moved and when its repository changes topic; a value written "
                  "here is replaced. The newsroom counts a topic's new references by it.",
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    objects = ReferenceQuerySet.as_manager()

    class Meta:
        ordering = ["-merged_at", "-opened_at", "-id"]
        constraints = [
            models.UniqueConstraint(fields=["repository", "kind", "key"], name="unique_reference_natural_key")
        ]
        indexes = [
            # The API's references of one repository in sync order (updated_at, id): a page walks
            # this repository's rows in order and stops, however many it has.
            models.Index(fields=["repository", "updated_at", "id"], name="reference_repository_updated"),
            # The newsroom's drafted digests: how many references of a topic arrived after a draft,
            # counted from this index alone (one range, however many repositories the topic has).
            models.Index(fields=["topic", "created_at"], name="reference_topic_created"),
            # The admin's list in its default order (a page is a walk of this index) and its search's
            # exact look-ups: a number or tag, an author's login, the start of a SHA (pattern_ops on PostgreSQL).
            models.Index(fields=["-merged_at", "-opened_at", "-id"], name="reference_admin_order"),
            models.Index(fields=["key"], name="reference_key"),
            models.Index(fields=["author_login"], name="reference_author_login"),
            models.Index(fields=["sha"], opclasses=["varchar_pattern_ops"], name="reference_sha_prefix"),
            # A repository's page: its published references newest first, and the weekly chart's
            # count over a range of merged_at, both from this index alone (about 5% of references
            # are ever cited, so the partial index is small).
            models.Index(
                fields=["repository", "-merged_at", "-opened_at", "-id"], include=["first_published_at"],
                condition=models.Q(first_published_at__isnull=False), name="reference_published_by_repo",
            ),
        ]

    def __str__(self) -> str:
        """What the admin's reference picker shows: three "Update README.md" commits must look
        different, so the repository, the PR/issue number (short SHA, release tag) and the day.
        Reads ``repository``: querysets that print many select_related("repository")."""
        when = self.merged_at or self.opened_at
        parts = [f"{self.repository.full_name} {self.identifier}".strip(), self.title]
        return " · ".join([*parts, when.date().isoformat()] if when else parts)

    @property
    def identifier(self) -> str:
        """#123 for pull requests and issues, the short SHA of a commit, a release's tag."""
        if self.kind == self.Kind.COMMIT:
            return (self.sha or self.key)[:7]
        if self.number:
            return f"#{self.number}"
        return self.key if self.kind == self.Kind.RELEASE else ""

    def save(self, *args, **kwargs):
        self.body_html = render_github_markdown(self.body)
        if not self._state.adding:
            self.lock_citing_digests()
        super().save(*args, **kwargs)

    def lock_citing_digests(self) -> list[int]:
        """Lock the digests citing this reference, in id order, before its row is written; their ids.

        A saved reference re-renders the digests citing it in the same transaction (its title and URL
        show on their pages: digests/signals.py). Written first, its row was locked before theirs,
        the opposite of a digest's write (its row, then its references: ``Digest.lock_cited_references``),
        and ingestion retitling a cited pull request deadlocked with a Publisher saving a digest citing
        it. Outside a transaction each statement commits alone, holding nothing: no lock is needed.
        """
        using = self._state.db or router.db_for_write(type(self), instance=self)
        if not transaction.get_connection(using).in_atomic_block:
            return []
        citing = digest_model("Digest").objects.using(using).filter(digest_references__reference=self)
        return list(citing.order_by("pk").select_for_update(of=("self",), no_key=True).values_list("pk", flat=True))

    @property
    def display_title(self) -> str:
        """The title as the seed digests show it: commits carry their PR number, "(#186025)"."""
        return cards.display_title(self.kind, self.title, self.number)
