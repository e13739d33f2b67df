"""The editorial workflow shared by digests and blog posts.

draft -> in review -> published (scheduled while published_at is in the future)
-> archived. Editors write drafts and submit them; only Publishers approve,
publish, schedule, archive or change what is already public. The rules live
here, on the model layer, so the admin, the API and management commands all
obey the same ones -- hiding a button is not a permission check.
"""
from django.conf import settings
from django.core.exceptions import PermissionDenied
from django.db import models
from django.utils import timezone


class Status(models.TextChoices):
    DRAFT = "draft", "Draft"
    IN_REVIEW = "in_review", "In review"
    PUBLISHED = "published", "Published"
    ARCHIVED = "archived", "Archived"


#: Moves an editor (no publish permission) may make.
EDITOR_TRANSITIONS = {
    (Status.DRAFT, Status.IN_REVIEW),
    (Status.IN_REVIEW, Status.DRAFT),
}
#: Statuses whose content an editor may still change.
EDITOR_EDITABLE = {Status.DRAFT, Status.IN_REVIEW}


#: Who did what to an item, kept on its row (``note_edit``, ``note_status_change``). Left out of its
#: revisions: rolling content back does not rewrite who submitted it or when.
EDITORIAL_RECORD_FIELDS = ("created_by", "edited_by", "status_changed_at", "status_changed_by")


def _someone(user):
    """A saved user to credit, or None (a script, ingestion, an anonymous request)."""
    return user if getattr(user, "pk", None) is not None else None


def _by_user(help_text: str):
    return models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
                             related_name="+", editable=False, db_index=False, help_text=help_text)


def editorial_indexes(prefix: str) -> list[models.Index]:
    """A user's drafts, newest edit first, by creator and by last editor (the newsroom's "Yours").

    Partial (drafts only), so the look-up reads the user's drafts alone, however
    many published items they created or edited over the years.
    """
    drafts = models.Q(status=Status.DRAFT)
    return [models.Index(fields=[field, "-updated_at"], condition=drafts, name=f"{prefix}_drafts_by_{role}")
            for field, role in (("created_by", "creator"), ("edited_by", "editor"))]


class WorkflowError(PermissionDenied):
    """A status change or edit the user is not allowed to make."""


class PublishableQuerySet(models.QuerySet):
    def published(self, now=None):
        """What readers may see: status published and published_at already passed.

        Decided at query time, so a scheduled item goes live on the minute with
        no job running. Public code reaches content only through this method.
        `now` defaults to the current time; a statement compiled once and run
        many times passes a stand-in for it (``api.compiled``).
        """
        return self.filter(status=Status.PUBLISHED, published_at__lte=timezone.now() if now is None else now)


class PublishableModel(models.Model):
    """Status, publication time and the permission rules for changing them."""

    #: "<app_label>.<codename>" of the permission that makes a user a Publisher for this model.
    publish_permission: str = ""

    status = models.CharField(
        max_length=20,
        choices=Status.choices,
        default=Status.DRAFT,
        db_index=True,
        help_text="Draft → In review → Published → Archived. Only Publishers can publish or archive.",
    )
    published_at = models.DateTimeField(
        null=True,
        blank=True,
        db_index=True,
        help_text="When readers first see it. A future time schedules publication; empty means now.",
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)
    # The editorial record (what the newsroom page reads): set by the admin, the API and transition(),
    # never by ingestion or imports; empty where it was not recorded (publishing/editorial_records.py).
    created_by = _by_user("Who created it in the admin or over the API (empty: ingestion, an import, or not recorded).")
    edited_by = _by_user("Who last changed its content in the admin or over the API (a status change alone is "
                         "not an edit).")
    status_changed_at = models.DateTimeField(
        null=True, blank=True, editable=False,
        help_text="When it entered its current status through the workflow: for an item in review, when it was "
                  "submitted; for a draft, when it was returned to draft. Empty: created in this status, or moved "
                  "before this was recorded.")
    status_changed_by = _by_user("Who moved it into its current status (submitted it, returned it to draft …).")

    objects = PublishableQuerySet.as_manager()

    class Meta:
        abstract = True

    @property
    def is_published(self) -> bool:
        return self.status == Status.PUBLISHED and self.published_at is not None and (
            self.published_at <= timezone.now()
        )

    @property
    def is_scheduled(self) -> bool:
        return self.status == Status.PUBLISHED and self.published_at is not None and (
            self.published_at > timezone.now()
        )

    @property
    def display_status(self) -> str:
        return "Scheduled" if self.is_scheduled else self.get_status_display()

    def can_publish(self, user) -> bool:
        return bool(user and user.has_perm(self.publish_permission))

    def can_edit(self, user) -> bool:
        """Publishers edit anything; editors only what has not gone public yet."""
        return self.can_publish(user) or self.status in EDITOR_EDITABLE

    def can_transition(self, user, new_status: str) -> bool:
        if new_status == self.status:
            return self.can_edit(user)  # re-saving a public item is still changing it
        return self.can_publish(user) or (self.status, new_status) in EDITOR_TRANSITIONS

    def check_transition(self, user, new_status: str) -> None:
        """Raise WorkflowError unless `user` may move this item to `new_status`."""
        if not self.can_transition(user, new_status):
            raise WorkflowError(
                f"You cannot move this {self._meta.verbose_name} from "
                f"“{Status(self.status).label}” to “{Status(new_status).label}”: "
                "only Publishers can publish, schedule or archive."
            )
        if new_status == Status.PUBLISHED:
            self.check_publishable()

    def check_publishable(self) -> None:
        """Hook for models with extra conditions before going public (digests check citations)."""

    @property
    def was_returned_to_draft(self) -> bool:
        """A draft that went through the workflow before (a draft is created in its status, never moved to it)."""
        return self.status == Status.DRAFT and self.status_changed_at is not None

    def note_edit(self, user) -> None:
        """Credit `user` with the content as it will be saved (and with creating it, if it is new)."""
        if self._state.adding and self.created_by_id is None:
            self.created_by = _someone(user)
        self.edited_by = _someone(user)

    def note_status_change(self, user, at=None) -> None:
        """Record that `user` moved this item into its (new) status now: what "submitted" and "returned" read."""
        self.status_changed_at = at or timezone.now()
        self.status_changed_by = _someone(user)

    def transition(self, user, new_status: str, *, published_at=None, save: bool = True) -> None:
        """Change status as `user`, enforcing the workflow; publishing without a time means now.

        Passing ``published_at`` schedules the item, which is a publishing decision
        whatever the target status, so only Publishers may do it. A real change of
        status is recorded on the row (``note_status_change``), in the same save.
        """
        if published_at is not None and published_at != self.published_at and not self.can_publish(user):
            raise WorkflowError(
                f"You cannot set when this {self._meta.verbose_name} is published: only Publishers can schedule."
            )
        self.check_transition(user, new_status)
        if new_status != self.status:
            self.note_status_change(user)
        self.status = new_status
        if published_at is not None:
            self.published_at = published_at
        if save:
            self.save()

    def settle_publication(self) -> None:
        """Publishing without a time means now: fix that time before anything shows it.

        Subclasses that render stored parts on save (post cards and headers print the date)
        call this first, so the form, bulk actions, the API and schedules all render the
        same dated page. Idempotent.
        """
        if self.status == Status.PUBLISHED and self.published_at is None:
            self.published_at = timezone.now()

    def save(self, *args, **kwargs):
        self.settle_publication()
        if kwargs.get("update_fields") is not None and self.status == Status.PUBLISHED:
            kwargs["update_fields"] = {*kwargs["update_fields"], "published_at"}
        super().save(*args, **kwargs)
