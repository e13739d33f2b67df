"""Topics and repositories: what The Wire reports on."""
from django.apps import apps
from django.core.validators import RegexValidator
from django.db import connections, models
from django.urls import reverse
from django.utils import timezone

from publishing.workflow import Status


def digest_model(name: str):
    """A model of the digests module, found when a query first needs it: that module imports this one."""
    return apps.get_model("digests", name)


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
        return self.filter(models.Exists(digest_model("Digest").objects.published().filter(topic=models.OuterRef("pk"))))

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

    def published(self, now=None):
        """Repositories a published digest cites or names in an action item.

        A repository known only from drafts stays unseen, so its name cannot leak
        an unpublished story. One EXISTS per repository over ``DigestRepository``
        joined to the digest row: the probe stops at the first published digest
        instead of collecting every published reference of the archive (300,000
        rows: ~400 ms). Callers ask about one repository or one topic's few.
        """
        # the rule of PublishableQuerySet.published(), applied to the joined digest
        shown = digest_model("DigestRepository").objects.filter(
            repository=models.OuterRef("pk"), digest__status=Status.PUBLISHED, digest__published_at__lte=timezone.now() if now is None else now
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
