"""Editorial admin for The Wire."""
from django import forms
from django.apps import apps
from django.contrib import admin, messages
from django.db import models
from django.db.models import Count, OuterRef, Q, Subquery
from django.db.models.functions import Coalesce

import reversion

from api.responses import detail_json, etag_of
from images.admin import ImagePickerMixin, MarkdownPreviewsMixin
from publishing.admin import AutocompleteInlineMixin, LoadedAutocompleteFormSet, WorkflowAdmin
from publishing.changelists import (
    AutocompleteFilter, AutocompleteFiltersMixin, LargeListMixin, indexed_search, is_autocomplete,
)
from publishing.edit_conflicts import EditConflictAdmin

from . import previews
from .citations import check_citations
from .models import ActionItem, Digest, DigestReference, FAQEntry, Reference, Repository, Topic
from .schemas import DigestOut


#: GitHub URLs are https; also opts in to Django 6's default for scheme-less input.
HTTPS_URLS = {models.URLField: {"assume_scheme": "https"}}


class RepositoryInline(admin.TabularInline):
    formfield_overrides = HTTPS_URLS
    model = Repository
    fields = ["full_name", "url", "description"]
    extra = 0
    show_change_link = True


class TopicForm(forms.ModelForm):
    def clean_slug(self):  # the slug is its fediverse handle: one namespace (fediverse/handles.py)
        apps.get_app_config("fediverse").check_handle(self.cleaned_data["slug"], instance=self.instance)
        return self.cleaned_data["slug"]


@admin.register(Topic)
class TopicAdmin(EditConflictAdmin, admin.ModelAdmin):
    form = TopicForm
    list_display = ["name", "slug", "repository_count"]
    ordering = ["name"]  # the Count annotation drops Meta.ordering, and autocomplete pages need an order
    search_fields = ["name", "description"]
    prepopulated_fields = {"slug": ["name"]}
    inlines = [RepositoryInline]

    def get_queryset(self, request):
        return super().get_queryset(request).annotate(repository_total=Count("repositories"))

    @admin.display(description="repositories", ordering="repository_total")
    def repository_count(self, obj) -> int:
        return obj.repository_total


@admin.register(Repository)
class RepositoryAdmin(EditConflictAdmin, admin.ModelAdmin):
    formfield_overrides = HTTPS_URLS
    list_display = ["full_name", "topic", "url"]
    list_filter = ["topic"]
    list_select_related = ["topic"]
    search_fields = ["full_name", "description"]
    autocomplete_fields = ["topic"]
    view_on_site = True


class ReferenceStateFilter(admin.SimpleListFilter):
    """The states GitHub gives (``ingestion.importers``), from a fixed list: listing the stored ones reads every row."""

    title, parameter_name = "state", "state__exact"
    STATES = ["open", "closed", "merged", "published", "prerelease"]

    def lookups(self, request, model_admin):
        return [(state, state) for state in self.STATES]

    def queryset(self, request, queryset):
        return queryset.filter(state=self.value()) if self.value() else queryset


class ReferenceRepositoryFilter(AutocompleteFilter):
    title, parameter_name = "repository", "repository__id__exact"
    source, lookup = "digests.reference.repository", "repository_id"


class DigestRepositoryFilter(AutocompleteFilter):
    """Digests citing (or naming in an action item) a repository: ``DigestRepository``, one row per pair."""

    title, parameter_name = "repository", "references__repository__id__exact"
    source, lookup = "digests.reference.repository", "repository_links__repository_id"


@admin.register(Reference)
class ReferenceAdmin(AutocompleteFiltersMixin, LargeListMixin, admin.ModelAdmin):
    formfield_overrides = HTTPS_URLS
    list_display = ["title", "kind", "repository", "number", "short_sha", "state", "author_login", "merged_at"]
    list_filter = ["kind", ReferenceStateFilter, ReferenceRepositoryFilter, "merged_at"]
    list_select_related = ["repository"]
    # Searched by get_search_results through indexes: full text (title, body), the exact key or
    # author login, the start of a SHA, a repository's exact owner/name; never a scan of bodies.
    search_fields = ["title", "body", "key", "sha", "author_login", "repository__full_name"]
    search_help_text = ("Words of the title or body (as the site search finds them), a number or tag, "
                        "the start of a SHA, an author's login, or a repository's owner/name.")
    autocomplete_fields = ["repository"]
    fieldsets = [
        (None, {"fields": ["repository", "kind", "key", "number", "sha", "title", "url"]}),
        ("Activity", {"fields": ["author_login", "state", "merged_at", "opened_at", "labels", "stats"]}),
        ("Body", {"fields": ["body"], "description": "Raw Markdown from GitHub; it is sanitised before display."}),
        ("Publication", {"fields": ["first_published_at"], "description": (
            "Readers see a reference once a published digest cites it: from this time on. Set by the "
            "database when digests citing it are published, unpublished or rescheduled.")}),
    ]
    readonly_fields = ["first_published_at"]

    def get_queryset(self, request):
        return super().get_queryset(request).select_related("repository")  # the picker's labels name it

    def get_search_results(self, request, queryset, search_term):
        term = search_term.strip()
        exact = Q(key=term.lstrip("#")) | Q(author_login=term)
        if len(term) >= 4 and all(c in "0123456789abcdef" for c in term.lower()):
            exact |= Q(sha__startswith=term.lower())
        if "/" in term:
            exact |= Q(repository_id__in=list(Repository.objects.filter(full_name__iexact=term).values_list("pk", flat=True)))
        return indexed_search(queryset, term, exact=exact, prefix=is_autocomplete(request)), False

    @admin.display(description="SHA", ordering="sha")
    def short_sha(self, obj) -> str:
        return obj.sha[:10]


class CitationCheckFormSet(LoadedAutocompleteFormSet):
    """Refuses a digest whose summary, body or FAQ answers cite a number with no reference.

    The admin builds this formset with the digest as edited in the same request,
    so the check sees the new text and the new reference rows together; the FAQ
    answers come from the FAQ inline of the same request (``faq_formset``, set by
    ``DigestAdmin._create_formsets``).
    """

    faq_formset = None

    def clean(self):
        numbers = self.kept_numbers()
        duplicates = sorted({n for n in numbers if numbers.count(n) > 1})
        if duplicates:  # before Django's own unique check, whose message names no number
            listed = ", ".join(f"[{n}]" for n in duplicates)
            raise forms.ValidationError(
                f"Citation number{'s' if len(duplicates) > 1 else ''} {listed} "
                f"{'are' if len(duplicates) > 1 else 'is'} used by more than one reference."
            )
        super().clean()
        if any(self.errors):
            return
        report = check_citations([self.instance.summary, self.instance.body], numbers, plain=self.faq_answers())
        if not report.ok:
            raise forms.ValidationError(report.error_message())

    def faq_answers(self) -> tuple[str, ...]:
        """The answers of the FAQ rows that will exist after this save (as typed, valid or not)."""
        if self.faq_formset is None:
            return ()
        self.faq_formset.is_valid()  # cleans its rows
        return tuple(
            _kept(form, "answer") or ""
            for form in self.faq_formset.forms
            if getattr(form, "cleaned_data", None) and not form.cleaned_data.get("DELETE")
        )

    def kept_numbers(self) -> list[int]:
        """The citation numbers of the rows that will exist after this save, rows added meanwhile included."""
        return [
            _kept(form, "number")
            for form in self.forms
            if getattr(form, "cleaned_data", None)
            and not form.cleaned_data.get("DELETE")
            and _kept(form, "number") is not None
        ] + self.numbers_added_meanwhile()

    def numbers_added_meanwhile(self) -> list[int]:
        """Citations this form never showed: added since it was opened (a redraft adding references).
        The save keeps them (``publishing.edit_conflicts``), so the check counts them."""
        if self.instance.pk is None:
            return []
        shown = [form.instance.pk for form in self.forms if form.instance.pk is not None]
        added = DigestReference.objects.filter(digest=self.instance).exclude(pk__in=shown)
        return list(added.values_list("number", flat=True))


def _kept(form, name: str):
    """A row's value after this save: as typed, or the current one where the edit-conflict merge kept it."""
    return form.cleaned_data[name] if name in form.cleaned_data else getattr(form.instance, name)


def _cited_in(formsets) -> list[Reference]:
    """The references the citations formset names (new, changed or deleted rows alike)."""
    return [
        form.cleaned_data["reference"]
        for formset in formsets if formset.model is DigestReference
        for form in formset.forms if getattr(form, "cleaned_data", None) and form.cleaned_data.get("reference")
    ]


class DigestReferenceInline(AutocompleteInlineMixin, admin.TabularInline):
    model = DigestReference
    formset = CitationCheckFormSet
    autocomplete_fields = ["reference"]
    ordering = ["number"]
    extra = 1

    def get_queryset(self, request):
        return super().get_queryset(request).select_related("reference__repository")  # for the picker's labels


class ActionItemInline(AutocompleteInlineMixin, admin.TabularInline):
    model = ActionItem
    fields = ["position", "text", "repository", "priority"]
    autocomplete_fields = ["repository"]
    ordering = ["position"]
    extra = 1


class FAQEntryInline(MarkdownPreviewsMixin, admin.StackedInline):
    """Each answer previewed beside it as the page shows it: plain text whose citations link."""

    model = FAQEntry
    markdown_previews = {"answer": previews.FAQ_ANSWER}
    fields = ["position", "question", "answer"]
    ordering = ["position"]
    extra = 0


@admin.register(Digest)
class DigestAdmin(AutocompleteFiltersMixin, LargeListMixin, ImagePickerMixin, WorkflowAdmin):
    preview_url_name = "digests:preview"
    image_picker_fields = ("body",)
    markdown_previews = previews.FIELDS  # the summary and body previewed as the page renders them
    list_display = ["headline", "topic", "date", "status_badge", "published_at", "reference_count", "updated_at"]
    list_filter = ["status", "topic", DigestRepositoryFilter, "date"]
    list_select_related = ["topic"]
    # Searched by get_search_results through indexes: full text (headline, summary, body), the
    # exact slug, and the digests of a topic named exactly; never a scan of bodies.
    search_fields = ["headline", "summary", "body", "slug", "topic__name"]
    search_help_text = "Words of the headline, summary or body (as the site search finds them), a slug, or a topic's name."
    autocomplete_fields = ["topic"]
    prepopulated_fields = {"slug": ["headline"]}
    inlines = [DigestReferenceInline, ActionItemInline, FAQEntryInline]
    actions = WorkflowAdmin.actions + ["add_default_faq"]  # ingestion/admin.py adds "regenerate"
    fieldsets = [
        (None, {"fields": ["topic", "date", ("section", "label"), "headline", "slug", "byline", "disclosure"]}),
        ("Text", {"fields": ["summary", "body"],
                  "description": "Cite references by their number: [1] or [ref:1] (FAQ answers too)."}),
        ("Publication", {"fields": ["status", "published_at"]}),
    ]

    def get_queryset(self, request):
        """Each row's citation count by a subquery per shown row, not a GROUP BY over every digest."""
        counted = (DigestReference.objects.filter(digest=OuterRef("pk")).order_by().values("digest")
                   .annotate(total=Count("pk")).values("total"))
        return super().get_queryset(request).annotate(reference_total=Coalesce(Subquery(counted), 0))

    def edit_version(self, obj) -> str:
        """The ETag the API names for this digest (``If-Match`` there, the change form's version here)."""
        return etag_of(detail_json(DigestOut, Digest.objects.with_page_data().get(pk=obj.pk)))

    def get_search_results(self, request, queryset, search_term):
        term = search_term.strip()
        exact = Q(slug=term)
        topics = list(Topic.objects.filter(Q(name__iexact=term) | Q(slug=term)).values_list("pk", flat=True)) if term else []
        if topics:
            exact |= Q(topic_id__in=topics)
        return indexed_search(queryset, term, exact=exact, prefix=is_autocomplete(request)), False

    @admin.display(description="references", ordering="reference_total")
    def reference_count(self, obj) -> int:
        return obj.reference_total

    def _create_formsets(self, request, obj, change):
        """Hand the FAQ rows being saved to the citation check, which runs on the references inline,
        and keep the formsets for ``save_model``, which Django gives none."""
        formsets, inline_instances = super()._create_formsets(request, obj, change)
        by_model = {formset.model: formset for formset in formsets}
        if DigestReference in by_model and FAQEntry in by_model:
            by_model[DigestReference].faq_formset = by_model[FAQEntry]
        request.digest_formsets = formsets
        return formsets, inline_instances

    def save_model(self, request, obj, form, change):
        """Lock the digest's row and then every reference this save touches before the row is written:
        publishing it locks its references in its own ``UPDATE``, before ``save_related`` would
        (``Digest.lock_cited_references`` has the lock order)."""
        if change:
            obj.lock_cited_references(_cited_in(getattr(request, "digest_formsets", ())))
        super().save_model(request, obj, form, change)

    def save_related(self, request, form, formsets, change):
        form.instance.lock_cited_references(_cited_in(formsets))  # before the first citation is written
        super().save_related(request, form, formsets, change)
        report = form.instance.citation_report()
        if report.uncited:
            self.message_user(request, report.warning_message(), messages.WARNING)

    @admin.action(description="Add the generated FAQ for editing (digests without one)", permissions=["change"])
    def add_default_faq(self, request, queryset):
        """Only digests the user may still edit: an editor must not change what is already public."""
        added, refused = 0, 0
        for digest in queryset.select_related("topic"):
            if not digest.can_edit(request.user):
                refused += 1
            elif digest.add_default_faq():
                reversion.add_to_revision(digest)  # bulk_create sends no signals
                added += 1
        self.message_user(request, f"Added the generated FAQ to {added} digest{'s' if added != 1 else ''}.")
        if refused:
            self.message_user(
                request,
                f"{refused} digest{'s are' if refused != 1 else ' is'} already public; only Publishers can change "
                f"{'them' if refused != 1 else 'it'}.",
                messages.ERROR,
            )
