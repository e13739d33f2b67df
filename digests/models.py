"""The Wire: topics, repositories, the activity we cite, and the daily digests."""
import datetime

from django.core.validators import RegexValidator
import reversion
from django.db import connections, models, router
from django.urls import reverse
from django.utils import timezone
from django.utils.formats import date_format
from django.utils.text import slugify

from publishing.rendering import render_github_markdown, render_markdown
from publishing.workflow import PublishableModel, PublishableQuerySet, Status, WorkflowError

from . import cards
from .citations import CitationReport, check_citations

full_name_validator = RegexValidator(
    r"^[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})/[A-Za-z0-9._-]{1,100}$",
    "Enter a GitHub repository as owner/name, e.g. pytorch/executorch.",
)


#: TopicQuerySet.published_choices: topics with a live digest, as published() decides, by name.
PUBLISHED_TOPICS_SQL = """
    SELECT topic.id, topic.name, topic.slug FROM digests_topic topic
    WHERE EXISTS (
        SELECT 1 FROM digests_digest digest
        WHERE digest.topic_id = topic.id AND digest.status = %(published)s AND digest.published_at <= %(now)s
    )
    ORDER BY topic.name
"""


class TopicQuerySet(models.QuerySet):
    def published(self):
        """Topics with at least one published digest: the only ones readers can reach.

        EXISTS per topic, not ``IN (every published digest)``: each probe walks the
        (topic, date) index and stops at the first published digest, so the cost
        does not grow with the archive.
        """
        return self.filter(models.Exists(Digest.objects.published().filter(topic=models.OuterRef("pk"))))

    def published_choices(self) -> list["Topic"]:
        """``published()`` topics by name, with just their names and slugs: the Wire's topic filter.

        The same EXISTS probes in one prepared statement (PUBLISHED_TOPICS_SQL):
        this list is on every Wire page, and building the ORM's EXISTS query cost
        more CPU than the database spent answering it.
        """
        now = connections[self.db].ops.adapt_datetimefield_value(timezone.now())
        return list(self.raw(PUBLISHED_TOPICS_SQL, {"published": Status.PUBLISHED, "now": now}))


class Topic(models.Model):
    """A group of repositories The Wire reports on together, e.g. PyTorch."""

    name = models.CharField(max_length=100, unique=True)
    slug = models.SlugField(max_length=100, unique=True)
    description = models.TextField(blank=True)
    updated_at = models.DateTimeField(auto_now=True)

    objects = TopicQuerySet.as_manager()

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name

    def get_absolute_url(self) -> str:
        return reverse("digests:topic", args=[self.slug])


class RepositoryQuerySet(models.QuerySet):
    def get_or_create_by_full_name(self, full_name: str, **defaults):
        """Find a repository by owner/name (case-insensitively, as GitHub does) or create it."""
        existing = self.filter(full_name__iexact=full_name).first()
        if existing:
            return existing, False
        return self.create(full_name=full_name, **defaults), True

    def published(self):
        """Repositories a published digest cites or names in an action item.

        A repository known only from drafts stays unseen, so its name cannot leak
        an unpublished story. One EXISTS per repository over ``DigestRepository``
        joined to the digest row: the probe stops at the first published digest
        instead of collecting every published reference of the archive (300,000
        rows: ~400 ms). Callers ask about one repository or one topic's few.
        """
        # the rule of PublishableQuerySet.published(), applied to the joined digest
        shown = DigestRepository.objects.filter(
            repository=models.OuterRef("pk"), digest__status=Status.PUBLISHED, digest__published_at__lte=timezone.now()
        )
        return self.filter(models.Exists(shown))


class Repository(models.Model):
    """A GitHub repository, known by its owner/name."""

    topic = models.ForeignKey(
        Topic, related_name="repositories", null=True, blank=True, on_delete=models.SET_NULL
    )
    full_name = models.CharField(
        "owner/name", max_length=140, unique=True, validators=[full_name_validator],
        help_text="As on GitHub, e.g. pytorch/executorch.",
    )
    url = models.URLField(blank=True, help_text="Leave empty for https://github.com/owner/name.")
    description = models.TextField(blank=True)
    updated_at = models.DateTimeField(auto_now=True)

    objects = RepositoryQuerySet.as_manager()

    class Meta:
        ordering = ["full_name"]
        verbose_name_plural = "repositories"

    def __str__(self) -> str:
        return self.full_name

    def save(self, *args, **kwargs):
        if not self.url:
            self.url = f"https://github.com/{self.full_name}"
        super().save(*args, **kwargs)

    @property
    def owner(self) -> str:
        return self.full_name.split("/", 1)[0]

    @property
    def name(self) -> str:
        return self.full_name.split("/", 1)[1]

    def get_absolute_url(self) -> str:
        return reverse("digests:repository", args=[self.owner, self.name])


class ReferenceQuerySet(models.QuerySet):
    def published(self):
        """References cited by at least one published digest.

        Raw GitHub activity only becomes RepoJournal content once a published
        digest cites it; until then it is as private as the draft citing it.
        """
        return self.filter(
            pk__in=DigestReference.objects.filter(digest__in=Digest.objects.published()).values("reference_id")
        )

    def merged_per_week(self, weeks: int, *, today=None) -> list[tuple["datetime.date", int]]:
        """Count merged items per week (weeks start on Monday), oldest first, zeros included.

        One query: the database filters the window, Python buckets the dates, so
        the result is the same on SQLite and PostgreSQL.
        """
        today = today or timezone.localdate()
        first_monday = today - datetime.timedelta(days=today.weekday(), weeks=weeks - 1)
        start = timezone.make_aware(datetime.datetime.combine(first_monday, datetime.time.min))
        counts = dict.fromkeys((first_monday + datetime.timedelta(weeks=i) for i in range(weeks)), 0)
        for merged_at in self.filter(merged_at__gte=start).values_list("merged_at", flat=True):
            day = timezone.localtime(merged_at).date()
            week = day - datetime.timedelta(days=day.weekday())
            if week in counts:
                counts[week] += 1
        return list(counts.items())

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
        citing = DigestReference.objects.filter(digest__in=digests).values("reference_id")
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
    body = models.TextField(blank=True, help_text="Raw Markdown from GitHub, written by strangers.")
    body_html = models.TextField(blank=True, editable=False)
    opened_at = models.DateTimeField(
        null=True, blank=True, help_text="When it was opened, authored or released on GitHub."
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
        ]

    def __str__(self) -> str:
        return self.display_title

    def save(self, *args, **kwargs):
        self.body_html = render_github_markdown(self.body)
        super().save(*args, **kwargs)

    @property
    def display_title(self) -> str:
        """The title as the seed digests show it: commits carry their PR number, "(#186025)"."""
        return cards.display_title(self.kind, self.title, self.number)


#: A digest's columns a feed entry prints (``DigestQuerySet.with_feed_data``).
FEED_DIGEST_FIELDS = ("topic__name", "topic__slug", "date", "headline", "slug", "summary_html", "body_html",
                      "byline", "status", "published_at", "updated_at")


class DigestQuerySet(PublishableQuerySet):
    def with_listing_data(self):
        return self.select_related("topic")

    def for_cards(self):
        """Only what a listing prints (the stored card) and its keyset sort key (date, published_at, id)."""
        return self.only("card_html", "date", "published_at")

    def for_page(self):
        """What a digest page prints: the stored parts, not the Markdown sources or the card."""
        return self.select_related("topic").only(
            "slug", "headline", "section", "label", "date", "status", "published_at", "summary_html", "body_html",
            "description", "byline_html", "page_html", "head_html", "topic__name", "topic__slug",
        )

    def refresh_rendered(self) -> int:
        """Re-render and store the card and page parts of these digests (see ``digests.cards``).

        The signals below call it whenever something a digest shows is written; call
        it yourself after ``bulk_create``/``update()`` of digests or their children,
        which send no signals. Returns how many digests were rendered.
        """
        from reader import caching

        count = cards.refresh(self)
        if count:
            caching.invalidate()  # bulk_update sends no signals
        return count

    def citing(self, repository: "Repository"):
        """Digests that cite a reference of this repository or name it in an action item.

        Read from ``DigestRepository`` (one row per digest and repository, kept with
        the digest's rendered parts), not from the repository's references: a busy
        repository has tens of thousands of those, a digest a dozen repositories.
        """
        return self.filter(pk__in=DigestRepository.objects.filter(repository=repository).values("digest_id"))

    def citing_keys(self, repository: "Repository", kind: str, keys: list[str]):
        """Digests citing any of these references (by natural key): to re-render after a bulk upsert of them."""
        cited = DigestReference.objects.filter(
            reference__repository=repository, reference__kind=kind, reference__key__in=keys
        ).values("digest_id")
        return self.filter(pk__in=cited)

    def with_page_data(self):
        """Everything a digest page shows, in a fixed number of queries."""
        return self.select_related("topic").prefetch_related(
            models.Prefetch(
                "digest_references",
                queryset=DigestReference.objects.select_related("reference__repository"),
            ),
            models.Prefetch("action_items", queryset=ActionItem.objects.select_related("repository")),
            "faq_entries",
        )

    def with_feed_data(self):
        """What a feed entry prints (``digests/feed_content.html``), in a fixed number of queries.

        Like ``with_page_data`` but without the columns an entry never shows: the
        digest's stored page parts and Markdown sources, and the cited references'
        bodies. Those bodies, written by strangers and often long, were most of a
        Wire feed's 45 ms on the benchmark archive.
        """
        cited = DigestReference.objects.select_related("reference__repository").only(
            "digest_id", "number", "reference__kind", "reference__title", "reference__number", "reference__url",
            "reference__repository__full_name",
        )
        items = ActionItem.objects.select_related("repository").only(
            "digest_id", "text", "priority", "position", "repository__full_name",
        )
        return self.select_related("topic").only(*FEED_DIGEST_FIELDS).prefetch_related(
            models.Prefetch("digest_references", queryset=cited), models.Prefetch("action_items", queryset=items),
        )

    def with_action_priority(self, priority: str):
        """Digests with at least one action item of this priority (each digest once)."""
        return self.filter(pk__in=ActionItem.objects.filter(priority=priority).values("digest_id"))


#: Digest.neighbours: the published digests of one topic just before and just after a date.
NEIGHBOURS_SQL = """
    SELECT * FROM (
        SELECT id, slug, headline, 'previous' AS side FROM digests_digest
        WHERE topic_id = %(topic)s AND status = %(published)s AND published_at <= %(now)s AND date < %(date)s
        ORDER BY date DESC, id DESC LIMIT 1
    ) AS previous
    UNION ALL
    SELECT * FROM (
        SELECT id, slug, headline, 'next' AS side FROM digests_digest
        WHERE topic_id = %(topic)s AND status = %(published)s AND published_at <= %(now)s AND date > %(date)s
        ORDER BY date, id LIMIT 1
    ) AS following
"""


class Digest(PublishableModel):
    """A day's news about one topic, citing numbered references."""

    publish_permission = "digests.publish_digest"

    topic = models.ForeignKey(Topic, related_name="digests", on_delete=models.PROTECT)
    date = models.DateField(help_text="The day of activity this digest covers.")
    section = models.CharField(max_length=60, default="The Wire")
    label = models.CharField(max_length=60, blank=True, help_text="Second half of the kicker, e.g. Showcase.")
    headline = models.CharField(max_length=300)
    summary = models.TextField(help_text="Markdown. Cite references by number: [1] or [ref:1].")
    body = models.TextField(blank=True, help_text="Markdown. Cite references by number: [1] or [ref:1].")
    summary_html = models.TextField(blank=True, editable=False)
    body_html = models.TextField(blank=True, editable=False)
    byline = models.CharField(max_length=100, default="RepoJournal")
    slug = models.SlugField(max_length=200, unique=True, help_text="Part of the digest's address.")
    # Rendered on write by digests.cards from this digest and its own children (kept true by the signals below).
    description = models.TextField(blank=True, editable=False, help_text="The summary as plain text.")
    byline_html = models.TextField(blank=True, editable=False)
    card_html = models.TextField(blank=True, editable=False, help_text="The listing card, heading at <h2>.")
    page_html = models.TextField(blank=True, editable=False, help_text="Action items, references, FAQ, shipped.")
    head_html = models.TextField(blank=True, editable=False, help_text="JSON-LD: NewsArticle and FAQPage.")
    references = models.ManyToManyField(Reference, through="DigestReference", related_name="digests")

    objects = DigestQuerySet.as_manager()

    class Meta:
        ordering = ["-date", "-published_at", "-id"]
        get_latest_by = "date"
        permissions = [("publish_digest", "Can approve, publish, schedule and archive digests")]
        constraints = [models.UniqueConstraint(fields=["topic", "date"], name="one_digest_per_topic_and_day")]
        indexes = [
            # The Wire walks published digests newest first and stops after a page.
            models.Index(
                fields=["-date", "-published_at", "-id"], name="digest_published_order",
                condition=models.Q(status="published"),
            ),
            # API lists page through (updated_at, id) with a keyset cursor.
            models.Index(fields=["updated_at", "id"], name="digest_updated_order"),
        ]

    def __str__(self) -> str:
        return self.headline

    def save(self, *args, **kwargs):
        if not self.slug:
            self.slug = slugify(f"{self.topic.slug}-{self.date}")
        self.summary_html = render_markdown(self.summary, citations=True)
        self.body_html = render_markdown(self.body, citations=True)
        super().save(*args, **kwargs)

    def get_absolute_url(self) -> str:
        return reverse("digests:detail", args=[self.slug])

    @property
    def kicker(self) -> str:
        return " · ".join(part for part in (self.section, self.label) if part)

    @property
    def display_date(self) -> str:
        return date_format(self.date, "F j, Y")

    def neighbours(self) -> tuple["Digest | None", "Digest | None"]:
        """The previous and next published digests of the same topic, by date.

        Decided per request (publication is time-based), in one statement
        (NEIGHBOURS_SQL) of two probes of the (topic, date) index: as two ORM
        queries, building them cost more CPU than the database spent running them.
        """
        using = router.db_for_read(Digest, instance=self)  # this digest's database
        ops = connections[using].ops
        params = {"topic": self.topic_id, "date": ops.adapt_datefield_value(self.date), "published": Status.PUBLISHED,
                  "now": ops.adapt_datetimefield_value(timezone.now())}
        found = {digest.side: digest for digest in Digest.objects.using(using).raw(NEIGHBOURS_SQL, params)}
        return found.get("previous"), found.get("next")

    def citation_report(self) -> CitationReport:
        numbers = self.digest_references.values_list("number", flat=True)
        return check_citations([self.summary, self.body], numbers)

    def check_publishable(self) -> None:
        report = self.citation_report()
        if not report.ok:
            raise WorkflowError(f"“{self.headline}” cannot be published: {report.error_message()}")

    def shipped_repositories(self) -> list[Repository]:
        """Repositories of the cited references, in citation order, each once."""
        seen: dict[int, Repository] = {}
        for item in self.digest_references.all():
            seen.setdefault(item.reference.repository_id, item.reference.repository)
        return list(seen.values())

    def default_faq(self) -> list[tuple[str, str]]:
        """The FAQ the seed digests carry, generated from this digest's content."""
        return cards.default_faq(
            self.topic.name, self.display_date, self.summary, [item.text for item in self.action_items.all()],
            [repo.full_name for repo in self.shipped_repositories()],
        )

    def faq(self) -> list[tuple[str, str]]:
        """The editors' FAQ, or the generated defaults while there is none."""
        entries = [(entry.question, entry.answer) for entry in self.faq_entries.all()]
        return entries or self.default_faq()

    def add_default_faq(self) -> int:
        """Store the generated FAQ so editors can edit it; returns how many entries were added."""
        if self.faq_entries.exists():
            return 0
        entries = self.default_faq()
        for position, (question, answer) in enumerate(entries, start=1):
            # save(), not bulk_create(): the page cache and revisions listen for save signals
            FAQEntry.objects.create(digest=self, position=position, question=question, answer=answer)
        return len(entries)


class DigestReference(models.Model):
    """A reference as cited by one digest, under its citation number."""

    digest = models.ForeignKey(Digest, related_name="digest_references", on_delete=models.CASCADE)
    reference = models.ForeignKey(Reference, related_name="citations", on_delete=models.PROTECT)
    number = models.PositiveSmallIntegerField(help_text="The citation number used in the text: [1], [ref:1].")

    class Meta:
        ordering = ["number"]
        verbose_name = "cited reference"
        constraints = [
            models.UniqueConstraint(fields=["digest", "number"], name="unique_citation_number"),
            models.UniqueConstraint(fields=["digest", "reference"], name="unique_cited_reference"),
        ]

    def __str__(self) -> str:
        return f"[{self.number}] {self.reference}"


class DigestRepository(models.Model):
    """A repository a digest cites or names in an action item: what ``Digest.citing()`` reads.

    Derived data, rewritten by ``digests.cards.refresh`` whenever the digest's parts
    are (the same signals keep both true); never edited by hand.
    """

    digest = models.ForeignKey(Digest, related_name="repository_links", on_delete=models.CASCADE)
    repository = models.ForeignKey(Repository, related_name="digest_links", on_delete=models.CASCADE)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["repository", "digest"], name="unique_digest_repository"),
        ]


class ActionItem(models.Model):
    """Something readers of a digest should do, for one repository, with a priority."""

    class Priority(models.TextChoices):
        IMMEDIATE = "immediate", "Immediate"
        PLAN = "plan", "Plan"
        MONITOR = "monitor", "Monitor"

    digest = models.ForeignKey(Digest, related_name="action_items", on_delete=models.CASCADE)
    position = models.PositiveSmallIntegerField(default=0)
    text = models.TextField()
    repository = models.ForeignKey(
        Repository, related_name="action_items", null=True, blank=True, on_delete=models.PROTECT
    )
    priority = models.CharField(max_length=20, choices=Priority.choices, default=Priority.PLAN, db_index=True)

    class Meta:
        ordering = ["position", "id"]

    def __str__(self) -> str:
        return self.text


class FAQEntry(models.Model):
    """One question and answer at the foot of a digest."""

    digest = models.ForeignKey(Digest, related_name="faq_entries", on_delete=models.CASCADE)
    position = models.PositiveSmallIntegerField(default=0)
    question = models.CharField(max_length=300)
    answer = models.TextField()

    class Meta:
        ordering = ["position", "id"]
        verbose_name = "FAQ entry"
        verbose_name_plural = "FAQ entries"

    def __str__(self) -> str:
        return self.question


# Keeping the rendered parts true (digests.cards) ---------------------------------------------------
# Every write of something a digest's card or page shows re-renders the digests showing it.

def _refresh_digest(sender, instance, raw=False, origin=None, **kwargs):
    """A citation, action item or FAQ entry changed: its digest's page shows it.

    Not while the digest itself is being deleted (its children go first): rendering
    it then would re-create repository links the deletion has already collected.
    """
    deleting_digests = isinstance(origin, Digest) or getattr(origin, "model", None) is Digest
    if not raw and not deleting_digests:
        Digest.objects.filter(pk=instance.digest_id).refresh_rendered()


def _refresh_saved_digest(sender, instance, raw=False, **kwargs):
    if not raw:
        Digest.objects.filter(pk=instance.pk).refresh_rendered()


def _refresh_citing_digests(sender, instance, raw=False, created=False, **kwargs):
    """A reference's title, URL, kind or repository shows in every digest citing it (one indexed query)."""
    if not raw and not created:
        Digest.objects.filter(digest_references__reference=instance).refresh_rendered()


def _remember_shown(sender, instance, raw=False, **kwargs):
    """Before a topic or repository is saved, note the values digests show, to re-render only on a change."""
    if not raw and instance.pk:
        instance._shown_before = sender.objects.filter(pk=instance.pk).values_list(*SHOWN[sender]).first()


def _refresh_if_shown_changed(sender, instance, raw=False, created=False, **kwargs):
    """A renamed topic or repository re-renders its digests (hundreds: not for a description edit)."""
    before = getattr(instance, "_shown_before", None)
    if raw or created or before is None or before == tuple(getattr(instance, name) for name in SHOWN[sender]):
        return
    digests = Digest.objects.filter(topic=instance) if sender is Topic else Digest.objects.citing(instance)
    digests.refresh_rendered()


SHOWN = {Topic: ("name", "slug"), Repository: ("full_name",)}
for _model in (DigestReference, ActionItem, FAQEntry):
    models.signals.post_save.connect(_refresh_digest, sender=_model, dispatch_uid=f"cards-save-{_model.__name__}")
    models.signals.post_delete.connect(_refresh_digest, sender=_model, dispatch_uid=f"cards-delete-{_model.__name__}")
models.signals.post_save.connect(_refresh_saved_digest, sender=Digest, dispatch_uid="cards-save-Digest")
models.signals.post_save.connect(_refresh_citing_digests, sender=Reference, dispatch_uid="cards-save-Reference")
for _model in SHOWN:
    models.signals.pre_save.connect(_remember_shown, sender=_model, dispatch_uid=f"cards-before-{_model.__name__}")
    models.signals.post_save.connect(_refresh_if_shown_changed, sender=_model, dispatch_uid=f"cards-{_model.__name__}")

# Revision history: a digest's version includes its citations, action items and FAQ.
for _model in (DigestReference, ActionItem, FAQEntry):
    reversion.register(_model)
reversion.register(Digest, follow=["digest_references", "action_items", "faq_entries"])


class SearchCitation(models.Model):
    """A citation as the reader search walks it: the citing digest's order and state, the reference's vector.

    Finding the references most recently cited by a published digest walked
    digests, their citations and then each wide reference row to check its
    stored ``search_vector``: for the benchmark's query about 30 row visits,
    with TOAST reads, per match. This narrow copy holds, per citation, what
    that walk reads, so the partial index below is walked newest first and each
    check is one short row.

    Derived data, PostgreSQL only: triggers (``publishing/search_migrations.py``)
    keep it true on every insert, update and delete of citations, of a
    digest's status, date or publication time and of a reference's vector,
    ``bulk_create`` and ``update()`` included. The ``search_vector`` column is
    not a model field (like the others, see ``repojournal/search_migrations``).
    On SQLite the table stays empty; the fallback search does not read it.
    """

    citation_id = models.BigIntegerField(primary_key=True)
    digest_id = models.BigIntegerField()
    reference_id = models.BigIntegerField()
    status = models.CharField(max_length=20)
    date = models.DateField()
    published_at = models.DateTimeField(null=True)

    class Meta:
        indexes = [
            models.Index(
                fields=["-date", "-published_at", "-digest_id"], name="searchcitation_published",
                condition=models.Q(status="published"),
            ),
        ]
