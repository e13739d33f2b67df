"""Ingestion in the admin: deliveries (reprocess), runs, tracked repositories, feeds, drafts.

Actions queue Celery tasks after the admin's transaction commits; without
Redis (the local demo) Celery runs them inline.
"""
import egress
from django import forms
from django.contrib import admin, messages
from django.contrib.admin.widgets import AdminDateWidget
from django.core.exceptions import PermissionDenied
from django.db.models import Q
from django.shortcuts import redirect
from django.template.response import TemplateResponse
from django.utils.text import Truncator

from digests.models import Digest, Topic
from publishing.changelists import LargeListMixin

from . import drafting_model
from .admin_drafting import FellBackFilter, attach_to_digest_admin, redraft_with_model
from .admin_queue import send_after_commit
from .deliveries import HANDLERS
from .drafting import draft_digest

from .models import (
    DigestDraft, FeedEntry, FeedSource, IngestionRun, RedeliveryRequest, TrackedRepository, WebhookDelivery,
)
from .tasks import draft_digest_task, fetch_feed, poll_repository, process_delivery_task

_send_after_commit = send_after_commit  # the name this module's actions use


def _queue(modeladmin, request, queryset, task, label: str, **kwargs) -> None:
    ids = list(queryset.values_list("pk", flat=True))
    for pk in ids:
        _send_after_commit(task, pk, **kwargs)
    modeladmin.message_user(request, f"Queued {label} for {len(ids)} item(s).", messages.SUCCESS)


class ReadOnlyAdmin(admin.ModelAdmin):
    """Records written by ingestion itself: viewable and filterable, never hand-edited."""

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_rerun_permission(self, request) -> bool:
        """Reprocessing and regenerating need the model's change permission, though the form is read-only."""
        opts = self.opts
        return request.user.has_perm(f"{opts.app_label}.change_{opts.model_name}")


class EventFilter(admin.SimpleListFilter):
    """The events ingestion handles, plus ping, from a fixed list: listing the stored ones would read every row."""

    title, parameter_name = "event", "event__exact"

    def lookups(self, request, model_admin):
        return [(event, event) for event in (*HANDLERS, "ping")]

    def queryset(self, request, queryset):
        return queryset.filter(event=self.value()) if self.value() else queryset


@admin.register(WebhookDelivery)
class WebhookDeliveryAdmin(LargeListMixin, ReadOnlyAdmin):
    list_display = ["guid", "event", "action", "repository_full_name", "state", "attempts", "received_at"]
    list_filter = ["state", EventFilter, "received_at"]
    # Exact matches on indexed columns only (get_search_results); a substring of every detail would be a scan.
    search_fields = ["guid", "repository_full_name", "event"]
    search_help_text = "A delivery's GUID, a repository's exact owner/name, or an event (e.g. pull_request)."
    fields = ["guid", "event", "action", "repository_full_name", "state", "attempts", "received_at",
              "processed_at", "detail", "headers", "body_text"]
    readonly_fields = fields
    actions = ["reprocess"]

    def get_search_results(self, request, queryset, search_term):
        term = search_term.strip()
        if not term:
            return queryset, False
        return queryset.filter(Q(guid=term) | Q(repository_full_name=term) | Q(event=term)), False

    @admin.display(description="body")
    def body_text(self, obj) -> str:
        """The raw JSON as text; the admin escapes it, so it is shown, never interpreted."""
        return Truncator(bytes(obj.body).decode("utf-8", "replace")).chars(20_000)

    @admin.action(description="Reprocess selected deliveries", permissions=["rerun"])
    def reprocess(self, request, queryset):
        emptied = queryset.filter(body=b"").count()  # retention emptied them (newsroom.retention)
        if emptied:
            self.message_user(request, f"{emptied} delivery(ies) no longer hold their body (retention: "
                                       "RETENTION_WEBHOOK_BODY_DAYS) and cannot be reprocessed.", messages.WARNING)
        _queue(self, request, queryset.exclude(body=b""), process_delivery_task, "reprocessing", force=True)


@admin.register(IngestionRun)
class IngestionRunAdmin(ReadOnlyAdmin):
    list_display = ["started_at", "source", "subject", "status", "created", "updated", "unchanged", "short_error"]
    list_filter = ["source", "status", "started_at"]
    search_fields = ["subject", "error"]
    date_hierarchy = "started_at"
    readonly_fields = ["source", "subject", "delivery", "started_at", "finished_at", "status", "created",
                       "updated", "unchanged", "error"]
    fields = readonly_fields

    @admin.display(description="error")
    def short_error(self, obj) -> str:
        return Truncator(obj.error).chars(80)


@admin.register(RedeliveryRequest)
class RedeliveryRequestAdmin(ReadOnlyAdmin):
    """Failed deliveries we asked GitHub to send again (ingestion/redelivery.py); each GUID once per window."""

    list_display = ["requested_at", "tracked", "guid", "event", "status_code", "accepted"]
    list_filter = ["accepted", "event"]
    search_fields = ["guid"]
    readonly_fields = ["tracked", "guid", "delivery_id", "event", "status_code", "requested_at", "accepted"]
    fields = readonly_fields


@admin.register(TrackedRepository)
class TrackedRepositoryAdmin(admin.ModelAdmin):
    list_display = ["repository", "enabled", "poll_interval", "last_synced_at", "last_polled_at", "default_branch",
                    "hook_id"]
    list_editable = ["enabled"]
    list_filter = ["enabled"]
    list_select_related = ["repository"]
    search_fields = ["repository__full_name"]
    autocomplete_fields = ["repository"]
    readonly_fields = ["last_synced_at", "last_polled_at", "default_branch", "etags"]
    actions = ["poll_now"]

    @admin.action(description="Poll selected repositories now")
    def poll_now(self, request, queryset):
        _queue(self, request, queryset, poll_repository, "a poll")


class FeedEntryInline(admin.TabularInline):
    model = FeedEntry
    fields = ["entry_id", "post", "fetched_at"]
    readonly_fields = fields
    extra = 0
    can_delete = False

    def has_add_permission(self, request, obj=None):
        return False


class FeedSourceForm(forms.ModelForm):
    """Refuses a feed URL whose host is (or resolves to) an address the worker may not fetch."""

    class Meta:
        model = FeedSource
        fields = "__all__"
        help_texts = {"url": "An http(s) address on the public internet: loopback, private, link-local and "
                             "reserved addresses are refused (checked again at every fetch)."}

    def clean_url(self):
        url = self.cleaned_data["url"]
        try:
            egress.check_url(url)
        except egress.RefusedAddress as exc:
            raise forms.ValidationError("This feed cannot be fetched: %(reason)s.", code="refused_address",
                                        params={"reason": exc})
        return url


class FailingFeedFilter(admin.SimpleListFilter):
    """Enabled feeds whose last fetch failed (``FeedSource.objects.failing``): where the newsroom's count links."""

    title = "fetching"
    parameter_name = "failing"

    def lookups(self, request, model_admin):
        return [("yes", "Failing")]

    def queryset(self, request, queryset):
        return queryset.failing() if self.value() == "yes" else queryset


@admin.register(FeedSource)
class FeedSourceAdmin(admin.ModelAdmin):
    form = FeedSourceForm
    list_display = ["__str__", "url", "publish_entries", "enabled", "last_fetched_at", "failures", "next_attempt_at",
                    "short_error"]
    list_filter = ["enabled", "publish_entries", FailingFeedFilter]
    search_fields = ["url", "title"]
    filter_horizontal = ["default_authors"]
    readonly_fields = ["etag", "modified", "last_fetched_at", "failures", "next_attempt_at", "last_error",
                       "last_error_at"]

    @admin.display(description="last error")
    def short_error(self, source) -> str:
        return source.last_error[:120]
    actions = ["fetch_now"]

    @admin.action(description="Fetch selected feeds now")
    def fetch_now(self, request, queryset):
        _queue(self, request, queryset, fetch_feed, "a fetch")


class DraftDigestForm(forms.Form):
    topic = forms.ModelChoiceField(Topic.objects.all())
    date = forms.DateField(widget=AdminDateWidget, help_text="The day of activity (UTC).")


def regenerate_digests(modeladmin, request, queryset):
    """Admin action for digests: refresh each selected draft from its day's activity.

    Offered on the digest changelist (see below); runs inline so the editor sees the report at once,
    with the rule-based writer: with a model configured it is queued instead (a model may take minutes,
    never inside a web request), as "Redraft with the model" does.
    """
    if drafting_model.configured():
        return redraft_with_model(modeladmin, request, queryset)
    for digest in queryset.select_related("topic"):
        result = draft_digest(digest.topic, digest.date, use_model=False)
        modeladmin.message_user(request, result.summary(), messages.WARNING if result.skipped else messages.SUCCESS)


regenerate_digests.short_description = "Regenerate selected drafts from GitHub activity"
regenerate_digests.allowed_permissions = ("change",)


def _offer_regeneration_on_digests() -> None:
    """Add ``regenerate_digests`` to the digest admin's actions.

    The digests app knows nothing of ingestion (it sits below it), so the action is
    attached from here; ``digests`` comes before ``ingestion`` in INSTALLED_APPS, so its
    admin is registered by the time this module is discovered.
    """
    digest_admin = admin.site.get_model_admin(Digest)
    if regenerate_digests not in digest_admin.actions:
        digest_admin.actions = [*digest_admin.actions, regenerate_digests]


_offer_regeneration_on_digests()
attach_to_digest_admin()


@admin.register(DigestDraft)
class DigestDraftAdmin(ReadOnlyAdmin):
    """Drafts made by draft_digest; "Add" drafts a new digest for a topic and day."""

    list_display = ["digest", "generated_at", "writer", "short_report"]
    # "No date": drafts no editor has opened yet (the newsroom links there); "model failed": Needs attention's.
    list_filter = ["opened_at", "writer", FellBackFilter]
    list_select_related = ["digest"]
    readonly_fields = ["digest", "generated_at", "writer", "writer_reason", "model", "prompt_version", "input_tokens",
                       "output_tokens", "duration", "dropped", "report", "generated", "raw_response"]
    fields = readonly_fields
    actions = ["regenerate"]

    def has_add_permission(self, request):
        return request.user.has_perm("digests.add_digest")

    # A draft record belongs to its digest: whoever may edit digests (Editors, Publishers) sees the
    # list and regenerates, as they may on the digest changelist; no ingestion permission is needed.
    def has_view_permission(self, request, obj=None):
        return request.user.has_perm("digests.change_digest") or super().has_view_permission(request, obj)

    def has_rerun_permission(self, request) -> bool:
        return request.user.has_perm("digests.change_digest")

    def has_module_permission(self, request):
        return self.has_view_permission(request) or super().has_module_permission(request)

    def add_view(self, request, form_url="", extra_context=None):
        if not self.has_add_permission(request):
            raise PermissionDenied
        form = DraftDigestForm(request.POST or None)
        if request.method == "POST" and form.is_valid():
            # Inline, so never the model (it may take minutes): "Redraft with the model" queues that.
            result = draft_digest(form.cleaned_data["topic"], form.cleaned_data["date"], use_model=False)
            self.message_user(request, result.summary(), messages.WARNING if result.skipped else messages.SUCCESS)
            if result.digest is not None and not result.skipped:
                return redirect("admin:digests_digest_change", result.digest.pk)
        context = {**self.admin_site.each_context(request), "title": "Draft a digest", "form": form,
                   "opts": self.opts, "media": self.media + form.media}
        return TemplateResponse(request, "admin/ingestion/digestdraft/draft_form.html", context)

    @admin.display(description="last report")
    def short_report(self, obj) -> str:
        return Truncator(obj.report).chars(100)

    @admin.action(description="Regenerate selected drafts", permissions=["rerun"])
    def regenerate(self, request, queryset):
        count = 0
        for draft in queryset.select_related("digest"):
            _send_after_commit(draft_digest_task, draft.digest.topic_id, draft.digest.date.isoformat())
            count += 1
        self.message_user(request, f"Queued regeneration of {count} draft(s).", messages.SUCCESS)
