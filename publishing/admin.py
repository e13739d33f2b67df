"""Admin behaviour shared by digests and posts: the workflow, previews, bulk actions.

The permission rules themselves live on the model (publishing.workflow); this
mixin only routes every admin path through them: the change form validates the
status a user picks, the change view turns read-only once an editor may no
longer edit, and the bulk actions call ``transition()`` item by item.
"""
from django import forms
from django.contrib import admin, messages
from django.contrib.admin.utils import unquote
from django.contrib.admin.widgets import AutocompleteSelect
from django.core.exceptions import PermissionDenied
from django.db import OperationalError, router, transaction
from django.urls import reverse
from django.utils import timezone

import reversion
from reversion.admin import VersionAdmin

from .edit_conflicts import EditConflictAdmin
from .locks import ADMIN_MESSAGE, is_lock_conflict, retry_on_lock_conflict
from .signals import change_page_opened
from .workflow import Status, WorkflowError


#: Set on a request whose save lost a lock conflict twice: its form is shown again (``_saved_or_shown_again``).
LOST_LOCK_CONFLICT = "lost_lock_conflict"


class WorkflowForm(forms.ModelForm):
    """Checks a status change against the workflow for the user submitting the form."""

    current_user = None  # set per request by WorkflowAdmin.get_form
    lost_lock_conflict = False  # set by WorkflowAdmin._saved_or_shown_again when this save lost twice

    def clean(self):
        if self.lost_lock_conflict:  # nothing was saved: the form comes back as typed, saying why
            raise forms.ValidationError(ADMIN_MESSAGE, code="lock_conflict")
        cleaned = super().clean()
        new_status = cleaned.get("status")
        if new_status and not self.instance.can_transition(self.current_user, new_status):
            self.add_error(
                "status",
                f"Only Publishers can move this from “{Status(self.instance.status).label}” "
                f"to “{Status(new_status).label}”.",
            )
        return cleaned


class LoadedAutocompleteSelect(AutocompleteSelect):
    """An autocomplete showing its row's already-loaded choice rather than querying for it.

    Django's widget looks its selected option up with one query per widget, so a
    digest with 30 cited references cost 30 extra queries to display.
    """

    loaded = None  # the selected object, set per row by LoadedAutocompleteFormSet

    def optgroups(self, name, value, attr=None):
        selected = [str(v) for v in value if str(v) not in self.choices.field.empty_values]
        if self.loaded is None or selected != [str(self.loaded.pk)]:
            return super().optgroups(name, value, attr)
        options = [] if self.is_required else [self.create_option(name, "", "", False, 0)]
        label = self.choices.field.label_from_instance(self.loaded)
        options.append(self.create_option(name, self.loaded.pk, label, True, len(options)))
        return [(None, options, 0)]


class LoadedAutocompleteFormSet(forms.BaseInlineFormSet):
    """Hands each row's related objects (loaded by the inline's select_related) to its autocompletes."""

    def _construct_form(self, i, **kwargs):
        form = super()._construct_form(i, **kwargs)
        for name, field in form.fields.items():
            widget = getattr(field.widget, "widget", field.widget)  # unwrap RelatedFieldWidgetWrapper
            model_field = form.instance._meta.get_field(name) if isinstance(widget, LoadedAutocompleteSelect) else None
            if model_field is not None and model_field.is_cached(form.instance):
                widget.loaded = model_field.get_cached_value(form.instance)
        return form


class AutocompleteInlineMixin:
    """Inline rows in a fixed number of queries: related objects joined, autocompletes fed from them."""

    formset = LoadedAutocompleteFormSet

    def get_queryset(self, request):
        return super().get_queryset(request).select_related(*self.autocomplete_fields)

    def formfield_for_foreignkey(self, db_field, request, **kwargs):
        if db_field.name in self.get_autocomplete_fields(request):
            kwargs["widget"] = LoadedAutocompleteSelect(db_field, self.admin_site, using=kwargs.get("using"))
        return super().formfield_for_foreignkey(db_field, request, **kwargs)


class WorkflowAdmin(EditConflictAdmin, VersionAdmin):
    """ModelAdmin for PublishableModel subclasses, with revision history (django-reversion) and
    change forms that merge or refuse a stale save (``publishing.edit_conflicts``)."""

    form = WorkflowForm
    preview_url_name = ""  # e.g. "digests:preview"
    actions = ["submit_for_review", "return_to_draft", "publish", "archive"]

    def get_form(self, request, obj=None, **kwargs):
        form = super().get_form(request, obj, **kwargs)
        lost = getattr(request, LOST_LOCK_CONFLICT, False)
        return type(form.__name__, (form,), {"current_user": request.user, "lost_lock_conflict": lost})

    def is_publisher(self, request) -> bool:
        return request.user.has_perm(self.model.publish_permission)

    def has_publish_permission(self, request) -> bool:
        """For actions declared with ``permissions=["publish"]`` (Django asks ``has_<name>_permission``)."""
        return self.is_publisher(request)

    def get_readonly_fields(self, request, obj=None):
        readonly = list(super().get_readonly_fields(request, obj))
        if not self.is_publisher(request):
            readonly.append("published_at")  # scheduling is a publishing decision
        return readonly

    def formfield_for_choice_field(self, db_field, request, **kwargs):
        if db_field.name == "status" and not self.is_publisher(request):
            kwargs["choices"] = [(s.value, s.label) for s in (Status.DRAFT, Status.IN_REVIEW)]
        return super().formfield_for_choice_field(db_field, request, **kwargs)

    def has_change_permission(self, request, obj=None):
        allowed = super().has_change_permission(request, obj)
        return allowed and (obj is None or obj.can_edit(request.user))

    def has_delete_permission(self, request, obj=None):
        allowed = super().has_delete_permission(request, obj)
        return allowed and (obj is None or obj.can_edit(request.user))

    def save_model(self, request, obj, form, change):
        """Keep the editorial record (what the newsroom reads): who created and last edited it, who moved it.

        A save whose only changes are the status and publication time is a move in the
        workflow, not an edit: a Publisher returning a draft does not become its editor.
        """
        changed = set(form.changed_data)
        if "status" in changed:
            obj.note_status_change(request.user)
        if not change or not changed or not changed <= {"status", "published_at"}:
            obj.note_edit(request.user)
        super().save_model(request, obj, form, change)

    def add_view(self, request, form_url="", extra_context=None):
        return self._saved_or_shown_again(request, super().add_view, request, form_url, extra_context)

    def change_view(self, request, object_id, form_url="", extra_context=None):
        """The change page; opening it able to edit tells listeners (``publishing.signals.change_page_opened``)."""
        response = self._saved_or_shown_again(request, super().change_view, request, object_id, form_url,
                                              extra_context)
        context = getattr(response, "context_data", None) or {}
        if request.method == "GET" and response.status_code == 200 and context.get("has_change_permission"):
            change_page_opened.send(sender=self.model, object_id=context["original"].pk, user=request.user)
        return response

    def _saved_or_shown_again(self, request, view, *args):
        """`view` (the add or change page); a save that loses a lock conflict is tried once more, then
        shown again.

        The page saves in one transaction (django-reversion's, around Django's), which a lost lock
        conflict (``publishing.locks``) rolls back whole: running the view again is running the save
        again. If that loses too, the form comes back as the editor typed it, inlines included, saying
        what happened and that nothing was saved (``WorkflowForm.clean`` refuses it), instead of a page
        saying the database is unavailable.
        """
        using = router.db_for_write(self.model)
        if request.method != "POST" or transaction.get_connection(using).in_atomic_block:
            return view(*args)
        try:
            return retry_on_lock_conflict(view, *args, using=using)
        except OperationalError as error:
            if not is_lock_conflict(error):
                raise
        setattr(request, LOST_LOCK_CONFLICT, True)
        return view(*args)

    def revision_view(self, request, object_id, version_id, extra_context=None):
        """Rolling back rewrites the item as it is now, so the user must be allowed to edit it now.

        django-reversion checks permissions against the *reverted* copy, which would
        let an editor turn a published item back into an editable draft.
        """
        current = self.get_object(request, unquote(object_id))
        if current is not None and not self.has_change_permission(request, current):
            raise PermissionDenied
        return super().revision_view(request, object_id, version_id, extra_context)

    def get_actions(self, request):
        actions = super().get_actions(request)
        if not self.is_publisher(request):
            for name in ("publish", "archive"):
                actions.pop(name, None)
        return actions

    def view_on_site(self, obj):
        """Readers' page when public, otherwise the staff preview of exactly that page."""
        if obj.is_published:
            return obj.get_absolute_url()
        return reverse(self.preview_url_name, args=[obj.pk])

    def _transition_selected(self, request, queryset, new_status: str, verb: str):
        done, refused = 0, []
        for obj in queryset:
            try:
                with reversion.create_revision():
                    obj.transition(request.user, new_status)
                    reversion.set_user(request.user)
                    reversion.set_comment(f"{verb} via bulk action.")
                done += 1
            except WorkflowError as error:
                refused.append(str(error))
        if done:
            self.message_user(request, f"{verb}: {done} item{'s' if done != 1 else ''}.", messages.SUCCESS)
        for reason in refused:
            self.message_user(request, reason, messages.ERROR)

    @admin.action(description="Submit selected for review", permissions=["change"])
    def submit_for_review(self, request, queryset):
        self._transition_selected(request, queryset, Status.IN_REVIEW, "Submitted for review")

    @admin.action(description="Return selected to draft", permissions=["change"])
    def return_to_draft(self, request, queryset):
        self._transition_selected(request, queryset, Status.DRAFT, "Returned to draft")

    @admin.action(description="Publish selected (now, or at their scheduled time)", permissions=["change"])
    def publish(self, request, queryset):
        self._transition_selected(request, queryset, Status.PUBLISHED, "Published")

    @admin.action(description="Archive selected", permissions=["change"])
    def archive(self, request, queryset):
        self._transition_selected(request, queryset, Status.ARCHIVED, "Archived")

    @admin.display(description="status", ordering="status")
    def status_badge(self, obj) -> str:
        if obj.is_scheduled:
            return f"Scheduled for {timezone.localtime(obj.published_at):%Y-%m-%d %H:%M}"
        return obj.get_status_display()
