"""Digests -- a day's news about one topic -- and what each is made of: citations, action items, FAQ."""
import reversion
from django.contrib.contenttypes.fields import GenericRelation
from django.db import connections, models, router
from django.urls import reverse
from django.utils import timezone
from django.utils.formats import date_format
from django.utils.text import slugify

from images.models import ImageUse, record_uses
from publishing import social_cards
from publishing.rendering import image_ids, render_markdown
from publishing.signals import announce_bulk_write
from publishing.workflow import (
    EDITORIAL_RECORD_FIELDS, PublishableModel, PublishableQuerySet, Status, WorkflowError, editorial_indexes,
)

from .. import cards
from ..citations import CitationReport, check_citations
from .references import Reference
from .topics import Repository, Topic


#: A digest's columns a feed entry prints (``DigestQuerySet.with_feed_data``).
FEED_DIGEST_FIELDS = ("topic__name", "topic__slug", "date", "headline", "slug", "summary_html", "body_html",
                      "byline", "disclosure", "status", "published_at", "updated_at")


class DigestQuerySet(PublishableQuerySet):
    def draw_missing_social_cards(self, seconds: float = social_cards.SWEEP_SECONDS) -> int:
        """Draw the og:image cards these digests lack (written in bulk); ``social_cards.draw_missing``."""
        return social_cards.draw_missing(self, DigestCard, seconds)

    def with_listing_data(self):
        return self.select_related("topic")

    def for_cards(self):
        """Only what a listing prints (the stored card) and its keyset sort key (date, published_at, id)."""
        return self.only("card_html", "date", "published_at")

    def for_page(self):
        """What a digest page prints: the stored parts, not the Markdown sources or the card."""
        return self.select_related("topic").only(
            "slug", "headline", "section", "label", "date", "status", "published_at", "summary_html", "body_html",
            "meta_description", "byline_html", "page_html", "head_html", "social_card", "topic__name", "topic__slug",
        )

    def refresh_rendered(self) -> int:
        """Re-render and store the card and page parts of these digests (see ``digests.cards``).

        The signals below call it whenever something a digest shows is written; call
        it yourself after ``bulk_create``/``update()`` of digests or their children,
        which send no signals. Returns how many digests were rendered.
        """
        count = cards.refresh(self)
        if count:
            announce_bulk_write(Digest, self.values("pk"))  # bulk_update sends no model signals
        return count

    def citing(self, repository: "Repository"):
        """Digests that cite a reference of this repository or name it in an action item.

        Read from ``DigestRepository`` (one row per digest and repository, kept with
        the digest's rendered parts), not from the repository's references: a busy
        repository has tens of thousands of those, a digest a dozen repositories.
        """
        return self.filter(pk__in=DigestRepository.objects.filter(repository=repository).values("digest_id"))

    def newest_citing(self, repository_id: int, now):
        """Published digests citing the repository (as ``citing``), newest first (the listing order).

        Walks ``DigestRepository``'s partial index of published links in that
        order and stops at the slice: a repository cited by hundreds of digests
        costs what one cited by twenty does. The digest's own status and time
        are checked too (``published``), so a copy is never what decides.
        """
        return self.published(now).filter(
            repository_links__repository=repository_id, repository_links__digest_status=Status.PUBLISHED,
            repository_links__digest_published_at__lte=now,
        ).order_by("-repository_links__digest_date", "-repository_links__digest_published_at",
                   "-repository_links__digest_id")

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
    disclosure = models.CharField(max_length=300, blank=True, help_text="Optional line under the byline, in the feed "
                                  "and the API: how it was drafted (the model writer fills it if blank). Plain text.")
    slug = models.SlugField(max_length=200, unique=True, help_text="Part of the digest's address.")
    # Rendered on write by digests.cards from this digest and its own children (kept true by the signals below).
    description = models.TextField(blank=True, editable=False, help_text="The summary as plain text.")
    meta_description = models.CharField(
        max_length=200, blank=True, editable=False,
        help_text="The summary as plain text without citations, cut at a word: the page's meta description.",
    )
    byline_html = models.TextField(blank=True, editable=False)
    card_html = models.TextField(blank=True, editable=False, help_text="The listing card, heading at <h2>.")
    page_html = models.TextField(blank=True, editable=False, help_text="Action items, references, FAQ, shipped.")
    head_html = models.TextField(blank=True, editable=False, help_text="JSON-LD: NewsArticle and FAQPage.")
    social_card = models.CharField(
        max_length=16, blank=True, editable=False,
        help_text="Fingerprint of the stored og:image card (DigestCard), part of its URL; drawn on save.",
    )
    references = models.ManyToManyField(Reference, through="DigestReference", related_name="digests")
    image_uses = GenericRelation(ImageUse, related_query_name="digest")

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
            # The admin's list in its default order, every status: a page is a walk of this index.
            models.Index(fields=["-date", "-published_at", "-id"], name="digest_admin_order"),
            *editorial_indexes("digest"),  # the newsroom's "Yours"
        ]

    def __str__(self) -> str:
        return self.headline

    def save(self, *args, **kwargs):
        if not self.slug:
            self.slug = slugify(f"{self.topic.slug}-{self.date}")
        self.summary_html = render_markdown(self.summary, citations=True)
        self.render_body()
        super().save(*args, **kwargs)
        record_uses(self, image_ids(self.body), published=self.status == Status.PUBLISHED)

    def render_body(self) -> None:
        """The body as sanitised HTML: citations linked, ``![alt](image:ID)`` shown (the first eagerly)."""
        self.body_html = render_markdown(self.body, citations=True, images=True, eager=1)

    def get_absolute_url(self) -> str:
        return reverse("digests:detail", args=[self.slug])

    def draw_social_card(self) -> None:
        """Draw and store the og:image card if what it shows (headline, kicker, byline, date) changed."""
        shown = {"title": self.headline, "kicker": self.kicker, "byline": self.byline, "day": self.display_date}
        key = social_cards.store(DigestCard, self, shown)
        if key != self.social_card:
            self.social_card = key
            Digest.objects.filter(pk=self.pk).update(social_card=key)

    @property
    def social_card_url(self) -> str:
        """The card's URL (empty until drawn): it changes with the image, so it may be cached for good."""
        return reverse("digests:card", args=[self.slug, self.social_card]) if self.social_card else ""

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
        answers = tuple(self.faq_entries.values_list("answer", flat=True))
        return check_citations([self.summary, self.body], numbers, plain=answers)

    def check_publishable(self) -> None:
        report = self.citation_report()
        if not report.ok:
            raise WorkflowError(f"“{self.headline}” cannot be published: {report.error_message()}")

    def lock_cited_references(self, references=()) -> list[int]:
        """Lock this digest's row, then (if it is, or is being, published or unpublished) the references it
        cites and `references` (about to be), in id order in one statement, before a write; their ids.

        Citing a reference from a published digest, or publishing one, updates the references' rows (0014's
        triggers): locked row by row in each write's order, writes deadlocked. ``Reference.save``: digests first.
        """
        stored = Digest.objects.filter(pk=self.pk).select_for_update(no_key=True).values_list("status", flat=True)
        if self.pk is None or Status.PUBLISHED not in (self.status, *stored):  # drafts lock no reference
            return []
        touched = models.Q(pk__in=DigestReference.objects.filter(digest=self).values("reference_id"))
        touched |= models.Q(pk__in=[reference.pk for reference in references if reference.pk is not None])
        locked = Reference.objects.filter(touched).order_by("pk").select_for_update(no_key=True)
        return list(locked.values_list("pk", flat=True))

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


class DigestCard(social_cards.StoredCard):
    """A digest's og:image (``publishing.social_cards``), kept out of the digest's row: pages read that row."""

    digest = models.OneToOneField(Digest, primary_key=True, related_name="+", on_delete=models.CASCADE)


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
    # The digest's state and sort key, copied by the database (triggers, migration 0015) on every
    # insert here and every change to the digest, so a repository's newest published digests are
    # one walk of the index below instead of a sort of every digest citing the repository.
    digest_status = models.CharField(max_length=20, blank=True, editable=False)
    digest_date = models.DateField(null=True, blank=True, editable=False)
    digest_published_at = models.DateTimeField(null=True, blank=True, editable=False)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["repository", "digest"], name="unique_digest_repository"),
        ]
        indexes = [
            models.Index(
                fields=["repository", "-digest_date", "-digest_published_at", "-digest"],
                condition=models.Q(digest_status="published"), name="digestrepository_published",
            ),
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
    repository = models.ForeignKey(Repository, related_name="action_items", null=True, blank=True,
                                   on_delete=models.PROTECT)
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


# Revision history: a digest's version includes its citations, action items and FAQ.
for _model in (DigestReference, ActionItem, FAQEntry):
    reversion.register(_model)
reversion.register(Digest, follow=["digest_references", "action_items", "faq_entries"],
                   exclude=EDITORIAL_RECORD_FIELDS)
