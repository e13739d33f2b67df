"""The digest's admin page, as ingestion adds to it: who wrote the draft, what the checks dropped, the citations.

The digests app knows nothing of ingestion (it sits below it), so these read-only
panels and the "Redraft with the model" action are attached to the digest admin
from here, as ``regenerate_digests`` is (ingestion/admin.py). An editor reviewing a
model's draft sees beside the text which references its numbers cite, and what
the checks dropped and why, to restore by hand (docs/drafting.md, "Editors").
"""
from django.contrib import admin, messages
from django.utils.html import format_html, format_html_join
from django.utils.timezone import localtime

from digests.models import Digest, DigestReference

from . import drafting_model
from .admin_queue import send_after_commit
from .models import DigestDraft
from .tasks import draft_digest_task

PANELS = ("drafted_by", "dropped_by_checks", "cited_references")


class FellBackFilter(admin.SimpleListFilter):
    """Drafts still in draft that the rule-based writer wrote because the model's draft failed (Needs attention)."""

    title, parameter_name = "model failed", "fell_back"

    def lookups(self, request, model_admin):
        return [("yes", "Fell back to the rule-based writer")]

    def queryset(self, request, queryset):
        return queryset & DigestDraft.objects.fell_back() if self.value() == "yes" else queryset


def _record(digest) -> DigestDraft | None:
    return DigestDraft.objects.filter(digest=digest).first() if digest is not None and digest.pk else None


@admin.display(description="drafted by")
def drafted_by(digest) -> str:
    """The model and when, or the rule-based writer and why (the API key is never shown)."""
    record = _record(digest)
    if record is None:
        return "Not drafted by draft_digest."
    when = localtime(record.generated_at).strftime("%Y-%m-%d %H:%M")
    if record.writer == DigestDraft.Writer.MODEL:
        return format_html("The language model <strong>{}</strong> (prompt version {}), {}; {} input and {} output "
                           "tokens.", record.model, record.prompt_version, when, record.input_tokens,
                           record.output_tokens)
    return format_html("The {}, {}: {}.", record.get_writer_display(), when, record.writer_reason)


@admin.display(description="dropped by the checks")
def dropped_by_checks(digest) -> str:
    record = _record(digest)
    if record is None or not record.dropped:
        return "Nothing."
    rows = format_html_join("", "<li><strong>{}</strong>: “{}” — {}</li>",
                            ((item["part"], item["text"], item["reason"]) for item in record.dropped))
    return format_html("<ul>{}</ul>", rows)


@admin.display(description="cited references")
def cited_references(digest) -> str:
    """Each number with its reference's title and link, to check the text's citations without leaving the form."""
    if digest is None or not digest.pk:
        return "—"
    citations = DigestReference.objects.filter(digest=digest).select_related("reference__repository").order_by(
        "number")
    rows = format_html_join("", '<li>[{}] <a href="{}" rel="noopener" target="_blank">{}</a> {}</li>', (
        (c.number, c.reference.url or "#", c.reference.title, c.reference.repository.full_name) for c in citations))
    # A list without a style attribute: the admin's Content-Security-Policy refuses inline styles.
    return format_html('<ul class="cited-references">{}</ul>', rows)


@admin.action(description="Redraft with the model", permissions=["change"])
def redraft_with_model(modeladmin, request, queryset):
    """Queue ``draft_digest_task`` for each selected draft (never in the request: a model may take minutes)."""
    if not drafting_model.configured():
        modeladmin.message_user(request, "DRAFTING_MODEL_URL is not set: there is no model to redraft with.",
                                messages.ERROR)
        return
    drafts = list(queryset.filter(status="draft").values_list("topic_id", "date"))
    for topic_id, day in drafts:
        send_after_commit(draft_digest_task, topic_id, day.isoformat())
    skipped = queryset.count() - len(drafts)
    note = f" ({skipped} not in draft: only drafts are redrafted)" if skipped else ""
    modeladmin.message_user(request, f"Queued a model redraft of {len(drafts)} digest(s){note}.", messages.SUCCESS)


def attach_to_digest_admin() -> None:
    """Add the panels (after the text) and the action to the digest admin, once."""
    digest_admin = admin.site.get_model_admin(Digest)
    if redraft_with_model in digest_admin.actions:
        return
    digest_admin.actions = [*digest_admin.actions, redraft_with_model]
    for panel in (drafted_by, dropped_by_checks, cited_references):
        setattr(digest_admin, panel.__name__, panel)
    digest_admin.readonly_fields = [*digest_admin.readonly_fields, *PANELS]
    fieldsets = list(digest_admin.fieldsets)
    text = next(index for index, (name, _options) in enumerate(fieldsets) if name == "Text")
    fieldsets[text + 1:text + 1] = [
        ("Cited references", {"fields": ["cited_references"],
                              "description": "What each number in the summary, body and FAQ cites (read-only)."}),
        ("Draft", {"fields": ["drafted_by", "dropped_by_checks"],
                   "description": "Who wrote the draft; what the checks dropped from a model's answer, to restore "
                                  "by hand if it is right (docs/drafting.md)."}),
    ]
    digest_admin.fieldsets = fieldsets
