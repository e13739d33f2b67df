"""What ingestion remembers: deliveries, runs, tracked repositories, feeds and drafts.

The content itself (references, digests, posts) lives in ``digests`` and
``blog``; these models record where it came from, so every import can be
replayed, audited and repeated without duplicating anything.
"""
import datetime
import json

from django.conf import settings
from django.db import connections, models
from django.db.models import F, Q
from django.utils import timezone


class WebhookDeliveryQuerySet(models.QuerySet):
    def lost_or_due(self, pending_after: datetime.timedelta, now: datetime.datetime | None = None):
        """What the sweep queues: pending deliveries older than ``pending_after`` (their task should have run by
        now) and failed ones whose retry is due (``retry_at``; the row, not a Celery countdown, holds it, so a
        worker killed while it held the retry loses nothing)."""
        now = now or timezone.now()
        return self.filter(Q(state=WebhookDelivery.State.PENDING, received_at__lte=now - pending_after)
                           | Q(state=WebhookDelivery.State.FAILED, retry_at__lte=now))

    def insert_new(self, **values) -> int | None:
        """Store a delivery unless its GUID is already stored: the new row's id, or None.

        One statement either way (``INSERT ... ON CONFLICT (guid) DO NOTHING``):
        a redelivery raises no IntegrityError, so inside a transaction it needs
        no savepoint, and two copies arriving at once both get an answer. It is
        hand-written because ``create()`` -- building the instance, sending the
        model signals, compiling the INSERT -- cost the webhook more CPU than
        everything else it does in Python but publishing. Values are adapted by
        each field as the ORM would; fields not given get their defaults.
        """
        meta = self.model._meta
        fields = [field for field in meta.concrete_fields if not field.primary_key]
        connection = connections[self.db]
        params = [
            field.get_db_prep_save(values[field.attname] if field.attname in values else field.get_default(),
                                   connection)
            for field in fields
        ]
        with connection.cursor() as cursor:
            cursor.execute(self._insert_new_sql(connection, fields), params)
            row = cursor.fetchone()
        return row[0] if row else None

    def _insert_new_sql(self, connection, fields) -> str:
        meta, quote = self.model._meta, connection.ops.quote_name
        columns = ", ".join(quote(field.column) for field in fields)
        placeholders = ", ".join(["%s"] * len(fields))
        return (f"INSERT INTO {quote(meta.db_table)} ({columns}) VALUES ({placeholders}) "
                f"ON CONFLICT ({quote(meta.get_field('guid').column)}) DO NOTHING RETURNING {quote(meta.pk.column)}")


class WebhookDelivery(models.Model):
    """One verified GitHub webhook delivery, stored before we answer GitHub.

    GitHub does not redeliver a delivery we fail to process, so the raw body is
    kept: a delivery can be processed again from the admin, and the periodic
    sweep picks up any that never reached a worker (e.g. the broker was down).
    """

    class State(models.TextChoices):
        PENDING = "pending", "Pending"
        PROCESSED = "processed", "Processed"
        IGNORED = "ignored", "Ignored"
        FAILED = "failed", "Failed"

    guid = models.CharField("X-GitHub-Delivery", max_length=100, unique=True)
    event = models.CharField(max_length=50, db_index=True)
    action = models.CharField(max_length=50, blank=True)
    repository_full_name = models.CharField("repository", max_length=140, blank=True, db_index=True)
    headers = models.JSONField(default=dict)
    body = models.BinaryField(help_text="The raw request body exactly as signed by GitHub.")
    received_at = models.DateTimeField(default=timezone.now, db_index=True)
    state = models.CharField(max_length=20, choices=State.choices, default=State.PENDING, db_index=True)
    attempts = models.PositiveIntegerField(default=0)
    processed_at = models.DateTimeField(null=True, blank=True)
    detail = models.TextField(blank=True, help_text="Why it was ignored, or the error it failed with.")
    retry_at = models.DateTimeField(
        null=True, blank=True,
        help_text="When the sweep tries a failed delivery again (30 s, 1, 2, 4, 8 min after each failure); "
                  "empty once it succeeded or after its last try: then only “Reprocess” does.")

    objects = WebhookDeliveryQuerySet.as_manager()

    class Meta:
        ordering = ["-received_at", "-id"]
        verbose_name_plural = "webhook deliveries"
        # The admin's list in its default order: a page is a walk of this index.
        indexes = [models.Index(fields=["-received_at", "-id"], name="delivery_admin_order")]

    def __str__(self) -> str:
        return f"{self.event}.{self.action}" if self.action else self.event

    def payload(self) -> dict:
        return json.loads(bytes(self.body))

    def finish(self, state: str, detail: str = "", retry_at=None) -> None:
        self.state = state
        self.detail = detail
        self.processed_at = timezone.now()
        self.retry_at = retry_at
        self.save(update_fields=["state", "detail", "processed_at", "attempts", "retry_at"])


class IngestionRun(models.Model):
    """One poll, delivery, feed fetch or draft: when, how it went, what it changed."""

    class Source(models.TextChoices):
        WEBHOOK = "webhook", "Webhook delivery"
        POLL = "poll", "GitHub poll"
        FEED = "feed", "Feed fetch"
        DRAFT = "draft", "Digest draft"
        REDELIVERY = "redelivery", "Failed deliveries redelivered"

    class Status(models.TextChoices):
        RUNNING = "running", "Running"
        SUCCEEDED = "succeeded", "Succeeded"
        IGNORED = "ignored", "Ignored"
        FAILED = "failed", "Failed"

    source = models.CharField(max_length=20, choices=Source.choices, db_index=True)
    subject = models.CharField(max_length=500, help_text="Repository, feed URL or delivery GUID.")
    delivery = models.ForeignKey(
        WebhookDelivery, null=True, blank=True, related_name="runs", on_delete=models.SET_NULL
    )
    started_at = models.DateTimeField(default=timezone.now, db_index=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    status = models.CharField(max_length=20, choices=Status.choices, default=Status.RUNNING, db_index=True)
    created = models.PositiveIntegerField(default=0)
    updated = models.PositiveIntegerField(default=0)
    unchanged = models.PositiveIntegerField(default=0)
    error = models.TextField(blank=True)

    class Meta:
        ordering = ["-started_at", "-id"]

    def __str__(self) -> str:
        return f"{self.get_source_display()} {self.subject} ({self.status})"


class TrackedRepositoryQuerySet(models.QuerySet):
    def enabled(self):
        return self.filter(enabled=True)

    def for_full_name(self, full_name: str):
        """The enabled tracking of owner/name, matched case-insensitively as GitHub does."""
        return self.enabled().filter(repository__full_name__iexact=full_name).select_related("repository").first()

    def due(self, now: datetime.datetime | None = None):
        """Enabled repositories whose poll interval has passed since the last attempt."""
        now = now or timezone.now()
        return self.enabled().annotate(next_poll=F("last_polled_at") + F("poll_interval")).filter(
            Q(last_polled_at__isnull=True) | Q(next_poll__lte=now)
        )


class TrackedRepository(models.Model):
    """A repository we ingest: webhooks from untracked repositories are stored but ignored."""

    repository = models.OneToOneField("digests.Repository", related_name="tracking", on_delete=models.CASCADE)
    enabled = models.BooleanField(default=True)
    poll_interval = models.DurationField(
        default=datetime.timedelta(hours=1), help_text="How often to reconcile with the REST API (HH:MM:SS)."
    )
    last_polled_at = models.DateTimeField(null=True, blank=True, help_text="Last poll attempt.")
    last_synced_at = models.DateTimeField(
        null=True, blank=True, help_text="Start of the last successful poll; the next one fetches what changed since."
    )
    default_branch = models.CharField(max_length=200, blank=True)
    etags = models.JSONField(default=dict, blank=True, help_text="ETag of each list's first page, by URL.")
    hook_id = models.PositiveBigIntegerField(
        "webhook id", null=True, blank=True,
        help_text="The id of the repository webhook that sends us deliveries (the number at the end of its URL "
                  "under Settings → Webhooks). With it, deliveries GitHub failed to hand us are asked for again "
                  "every few minutes; the token needs admin:repo_hook (read) and repo hook write access.",
    )

    objects = TrackedRepositoryQuerySet.as_manager()

    class Meta:
        ordering = ["repository__full_name"]
        verbose_name_plural = "tracked repositories"

    def __str__(self) -> str:
        return str(self.repository)


class RedeliveryRequest(models.Model):
    """A failed GitHub delivery we asked GitHub to redeliver: so we ask once per window, and can show it.

    GitHub does not retry a delivery that failed (e.g. answered 503 while the
    database was down); ``ingestion.redelivery`` finds those in the hook's
    delivery log and requests them again.
    """

    tracked = models.ForeignKey(TrackedRepository, related_name="redelivery_requests", on_delete=models.CASCADE)
    guid = models.CharField("X-GitHub-Delivery", max_length=100, db_index=True)
    delivery_id = models.PositiveBigIntegerField(help_text="GitHub's id of the failed attempt we asked to repeat.")
    event = models.CharField(max_length=50, blank=True)
    status_code = models.IntegerField(help_text="What the failed attempt got from us (0: no answer).")
    requested_at = models.DateTimeField(default=timezone.now, db_index=True)
    accepted = models.BooleanField(default=False, help_text="GitHub accepted the request (202).")

    class Meta:
        ordering = ["-requested_at", "-id"]

    def __str__(self) -> str:
        return f"{self.guid} ({self.event})"


class ReferenceSyncState(models.Model):
    """GitHub's ``updated_at`` of the version of a pull request or issue we stored.

    Deliveries arrive out of order (a PR's ``closed`` can beat its ``opened``)
    and polls overlap with webhooks, so an older version must never overwrite
    a newer one.
    """

    reference = models.OneToOneField("digests.Reference", related_name="sync_state", on_delete=models.CASCADE)
    github_updated_at = models.DateTimeField()


class FeedSourceQuerySet(models.QuerySet):
    def due(self, now: datetime.datetime | None = None):
        """Enabled feeds whose next attempt (the hourly fetch, or a retry after a failure) has come."""
        now = now or timezone.now()
        return self.filter(enabled=True).filter(Q(next_attempt_at__isnull=True) | Q(next_attempt_at__lte=now))

    def failing(self):
        """Enabled feeds whose last fetch failed (the admin's "failing" filter, the newsroom's count)."""
        return self.filter(enabled=True, failures__gt=0)


class FeedSource(models.Model):
    """An Atom/RSS feed whose entries become blog posts.

    The sweep (``fetch_due_feeds``, every few minutes) fetches the feeds that are
    due: an hour after a success, and after a failure sooner, backing off
    exponentially (RETRY_BASE doubled per consecutive failure, capped at
    RETRY_CAP) so a broken feed is neither forgotten nor hammered.
    """

    #: A fetched feed is fetched again this long after.
    FETCH_INTERVAL = datetime.timedelta(hours=1)
    #: A queued fetch holds its feed this long; a fetch lost with a killed worker is queued again after it.
    FETCH_CLAIM = datetime.timedelta(minutes=15)
    #: The first retry after a failure; each further consecutive failure doubles it, up to RETRY_CAP.
    RETRY_BASE = datetime.timedelta(minutes=5)
    RETRY_CAP = datetime.timedelta(hours=12)

    url = models.URLField("feed URL", max_length=500, unique=True)
    title = models.CharField(max_length=300, blank=True)
    default_authors = models.ManyToManyField(
        "blog.Author", blank=True, related_name="+", help_text="Byline for entries that name no author."
    )
    default_tags = models.CharField(max_length=500, blank=True, help_text="Comma-separated tags for every entry.")
    publish_entries = models.BooleanField(
        default=False, help_text="Publish new entries at once; otherwise they arrive as drafts."
    )
    enabled = models.BooleanField(default=True)
    etag = models.CharField(max_length=300, blank=True)
    modified = models.CharField(max_length=100, blank=True)
    last_fetched_at = models.DateTimeField(null=True, blank=True)
    next_attempt_at = models.DateTimeField(
        null=True, blank=True, help_text="When the sweep fetches this feed next (empty: at its next run)."
    )
    failures = models.PositiveIntegerField(
        default=0, help_text="Fetches failed in a row; each doubles the wait before the next (reset on success)."
    )
    last_error = models.TextField(blank=True, help_text="Why the last fetch failed (empty once one succeeds).")
    last_error_at = models.DateTimeField(null=True, blank=True)

    objects = FeedSourceQuerySet.as_manager()

    class Meta:
        ordering = ["url"]

    def __str__(self) -> str:
        return self.title or self.url

    def retry_delay(self) -> datetime.timedelta:
        """The wait after the current run of ``failures``: 5 min, 10, 20 … capped at RETRY_CAP."""
        if self.failures < 1:
            return self.FETCH_INTERVAL
        return min(self.RETRY_BASE * 2 ** min(self.failures - 1, 20), self.RETRY_CAP)

    def record_failure(self, error: str, now: datetime.datetime | None = None) -> None:
        """Note a failed fetch and schedule the retry."""
        now = now or timezone.now()
        self.failures += 1
        self.last_error, self.last_error_at = error[:2000], now
        self.next_attempt_at = now + self.retry_delay()
        self.save(update_fields=["failures", "last_error", "last_error_at", "next_attempt_at"])

    def record_success(self, now: datetime.datetime | None = None) -> None:
        """A fetch worked: forget past failures and come back after the usual interval."""
        now = now or timezone.now()
        self.failures, self.last_error, self.last_error_at = 0, "", None
        self.next_attempt_at = now + self.FETCH_INTERVAL
        self.save(update_fields=["failures", "last_error", "last_error_at", "next_attempt_at"])

    def tag_list(self) -> list[str]:
        return [tag.strip() for tag in self.default_tags.split(",") if tag.strip()]


class FeedEntry(models.Model):
    """Maps a feed entry's id to the post it became, so a re-fetch updates that post."""

    source = models.ForeignKey(FeedSource, related_name="entries", on_delete=models.CASCADE)
    entry_id = models.CharField(max_length=500)
    post = models.OneToOneField("blog.Post", related_name="feed_entry", on_delete=models.CASCADE)
    fetched_at = models.DateTimeField(auto_now=True)

    class Meta:
        verbose_name_plural = "feed entries"
        constraints = [models.UniqueConstraint(fields=["source", "entry_id"], name="unique_feed_entry")]

    def __str__(self) -> str:
        return self.entry_id


class DigestDraftQuerySet(models.QuerySet):
    def unopened(self):
        """Drafts still in draft whose digest no editor has opened in the admin (the newsroom's list)."""
        return self.filter(opened_at__isnull=True, digest__status="draft")

    def fell_back(self):
        """Drafts still in draft that the rule-based writer wrote because the model's draft failed."""
        return self.filter(writer=DigestDraft.Writer.FALLBACK, digest__status="draft")

    def note_opened(self, digest_id, user, now=None) -> int:
        """Record the first time someone who may edit it opens the digest's change page (later opens change nothing).

        One UPDATE, conditional on ``opened_at`` being empty, so two editors opening
        it at once cannot both be first.
        """
        return self.filter(digest_id=digest_id, opened_at__isnull=True).update(
            opened_at=now or timezone.now(), opened_by=user)


class DigestDraft(models.Model):
    """What ``draft_digest`` last generated for a digest, and whether an editor has looked at it yet.

    Comparing a digest's current fields with these values tells which ones an
    editor has changed since; regenerating only rewrites the untouched ones.
    Who wrote it is recorded too (docs/drafting.md): a language model, with what it
    was asked and answered and what the checks dropped, or the rule-based writer and why.
    """

    class Writer(models.TextChoices):
        RULES = "rules", "rule-based writer"
        MODEL = "model", "language model"
        FALLBACK = "fallback", "rule-based writer (the model's draft failed)"

    digest = models.OneToOneField("digests.Digest", related_name="draft_record", on_delete=models.CASCADE)
    generated = models.JSONField(default=dict)
    generated_at = models.DateTimeField(
        default=timezone.now, help_text="When draft_digest last generated it: references arriving later are "
                                        "not in it yet (the newsroom counts them).")
    report = models.TextField(blank=True, help_text="What the last regeneration changed.")
    opened_at = models.DateTimeField(
        null=True, blank=True, editable=False,
        help_text="When someone who may edit digests first opened the digest's change page (empty: not yet).")
    opened_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, editable=False, on_delete=models.SET_NULL,
                                  related_name="+", help_text="Who opened it first.")
    writer = models.CharField(max_length=10, choices=Writer.choices, default=Writer.RULES, db_index=True,
                              help_text="Who wrote the last draft.")
    writer_reason = models.TextField(blank=True, help_text="Why the rule-based writer wrote it, if it did.")
    model = models.CharField(max_length=200, blank=True, help_text="The model asked (DRAFTING_MODEL).")
    prompt_version = models.CharField(max_length=20, blank=True)
    request_hash = models.CharField(
        max_length=64, blank=True, help_text="The model request's hash: a redraft asking the same reuses the answer.")
    input_tokens = models.PositiveIntegerField(null=True, blank=True)
    output_tokens = models.PositiveIntegerField(null=True, blank=True)
    duration = models.DurationField(null=True, blank=True, help_text="How long the model took to answer.")
    raw_response = models.TextField(blank=True, help_text="The model's answer as received (pruned by retention).")
    dropped = models.JSONField(
        default=list, blank=True,
        help_text="What the checks dropped from the model's answer, each with its part, text and reason.")

    objects = DigestDraftQuerySet.as_manager()

    def __str__(self) -> str:
        return f"Draft of {self.digest_id}"
