"""Edit conflicts in the admin: a save never silently undoes what someone else saved meanwhile.

A change form carries two hidden fields: the version it was opened at (``EDIT_VERSION``; for posts
and digests the very ETag the API names, ``api.responses.etag_of``) and a signed snapshot of the
values it showed, inline rows included (``EDIT_BASE``). The snapshot, not the revision history, is
the common ancestor of the three-way merge, because it is robust where the history is not: not
every writer leaves a revision (ingestion's redrafts, ``update()``, scripts; authors, topics,
repositories and images have no history at all), a revision records the whole item at the end of
a transaction rather than what one form showed, and the snapshot needs no query to read. It is
signed (``django.core.signing``) so a forged ancestor cannot make the merge throw away another
editor's change, and names its item (model and pk), so a form opened on one item cannot serve as
another's ancestor; it is compressed, so it costs about a third of the text it records.

The version says whether anything changed at all: on a save, when the version the snapshot was
taken at is still the item's (computed once per request, under the lock below), nobody saved
meanwhile and the item's fields are saved as typed, with no field-by-field comparison. It is also
what a client of the API sends as ``If-Match``. Computing it costs a post's or digest's whole API
detail, so a request computes it once (``EditConflictAdmin._version``).

On save the admin locks the item's row before reading it (``EditConflictAdmin.get_object``, in the
transaction Django wraps every change form's save in), so two saves landing at once cannot both
pass the check: the second waits for the first to commit and then merges against it. Per field,
the editor's input and the current value are each compared with the snapshot:

- changed only by the editor: saved; changed only by the other side: the current value is kept
  (the field is left out of ``cleaned_data``, so ``construct_instance`` never writes it);
- changed on both sides to different values: a conflict. Nothing is saved; the form comes back
  as typed, with both values side by side and a "take theirs" choice per field, and with a new
  snapshot in which the conflicting fields start from the other side's value, so the next save
  applies what the editor chose while fields only the other side changed still merge.

Text is compared normalised (``publishing.text.normalised``): a browser posts a textarea with
``\\r\\n`` line endings, which are no change of the ``\\n`` text stored.

Inline rows merge the same way, each against its own snapshot; rows someone else added are not in
the editor's formset, so the formset neither sees nor deletes them. A move in the workflow by the
scheduler or a bulk action is a change of status and publication time only: it merges like any
field only the other side changed, and never blocks a save.
"""
import copy
import datetime
import functools

from django import forms
from django.contrib import messages
from django.contrib.admin.models import LogEntry
from django.contrib.contenttypes.models import ContentType
from django.core.exceptions import ValidationError
from django.db import router, transaction
from django.db.models import UniqueConstraint
from django.forms.models import InlineForeignKeyField, construct_instance
from django.utils import timezone

import reversion
from reversion.models import Version

from editing.admin import EditingAdmin
from .conflict_panel import ConflictPanel
from .edit_snapshots import (EDIT_BASE, editable_field, field_state, form_state, opened_base, shown, sign,
                             state_version)
from .text import normalised

EDIT_VERSION, EDIT_PANEL = "_edit_version", "_edit_conflicts"
#: A radio per conflicting field, named this plus the field's HTML name: "mine" or "theirs".
RESOLVE = "_edit_resolve:"
#: The changes since a form was opened whose authors a refused or merged save names (the newest).
CHANGES_NAMED = 20


# --- Forms: the merge itself ----------------------------------------------------------------------

class MergingFormMixin:
    """Three-way merge of one form's fields, in ``clean`` (before ``construct_instance`` writes
    the instance, which still holds the current, locked row)."""

    edit_merged: tuple = ()  # fields whose current value was kept: the other side's changes
    edit_conflicts: tuple = ()  # fields both sides changed differently
    edit_current: dict | None = None  # the current state of the fields compared
    edit_typed: dict | None = None  # the editor's input to the conflicting fields, as shown beside theirs

    @property
    def edit_item(self):
        """The item whose change form this is (an inline row's is its parent, set by its formset)."""
        return self.instance

    def opened_fields(self, base: dict) -> dict | None:
        """This form's values as the snapshot `base` recorded them (None: not in it). Each of the two form
        kinds below (the item's own form, an inline row's) answers it; this base is never used alone."""
        raise NotImplementedError(f"{type(self).__name__} must say where its opened-at values are in the snapshot")

    def clean(self):
        base = opened_base(self.data, self.edit_item)
        if base is False:
            raise ValidationError("This form's record of what it was opened at is damaged; reload the page.",
                                  code="edit_base")
        fields = self.opened_fields(base) if base else None
        if fields:
            self._merge(fields)
        return super().clean()

    def _merge(self, opened: dict) -> None:
        names = [name for name in opened if name in self.cleaned_data and editable_field(self.instance, name)]
        current = {name: field_state(self.instance, name) for name in names}
        typed = copy.copy(self.instance)
        construct_instance(self, typed, fields=names)
        mine = {name: field_state(typed, name, self.cleaned_data[name] if editable_field(typed, name).many_to_many
                                  else None) for name in names}
        merged, conflicts = [], []
        for name in names:
            if self.data.get(RESOLVE + self.add_prefix(name)) == "theirs" or (
                    current[name] != opened[name] and mine[name] == opened[name]):
                if current[name] != mine[name]:
                    merged.append(name)
                del self.cleaned_data[name]  # construct_instance and save_m2m keep the current value
            elif current[name] != opened[name] and mine[name] != current[name]:
                conflicts.append(name)
        self.edit_merged, self.edit_conflicts, self.edit_current = tuple(merged), tuple(conflicts), current
        self.edit_typed = {name: _typed_shown(typed, name, self.cleaned_data[name]) for name in conflicts}
        self.__dict__["changed_data"] = [name for name in self.changed_data if name not in merged]
        for name in conflicts:
            self.add_error(name, f"Changed meanwhile to “{_clip(shown(self.instance, name))}”. Your input is "
                                 "kept here: keep it, edit it, or take theirs, then save again.")


def _typed_shown(typed, name, value) -> str:
    """The editor's input as an editor reads it: names of related items, a choice's label, a date as a date."""
    if typed._meta.get_field(name).many_to_many:
        return ", ".join(str(item) for item in value)
    return shown(typed, name)


def _clip(text: str, limit: int = 200) -> str:
    return text if len(text) <= limit else text[:limit] + "…"


class OpenedAtForm(MergingFormMixin, forms.ModelForm):
    """The item's own fields, plus the hidden version and snapshot the form was opened at."""

    @functools.cached_property
    def changed_data(self):
        """What the editor changed: never the form's own record of what it was opened at."""
        return [name for name in super().changed_data if name not in (EDIT_PANEL, EDIT_VERSION, EDIT_BASE)]

    edit_version_now = None  # the item's version under the save's lock, set by EditConflictAdmin.get_form

    def opened_fields(self, base):
        """Nothing to merge when the version the form was opened at is still the item's: nobody saved
        meanwhile. A snapshot after a refused save has no version (it mixes then and now): it merges."""
        if base.get("v") is not None and base["v"] == self.edit_version_now:
            return None
        return base.get("f")


def _opened_at_fields():
    return {
        EDIT_PANEL: forms.CharField(required=False, label="Changed meanwhile", widget=ConflictPanel),
        EDIT_VERSION: forms.CharField(required=False, widget=forms.HiddenInput),
        EDIT_BASE: forms.CharField(required=False, widget=forms.HiddenInput),
    }


class InlineMergingForm(MergingFormMixin):
    """An inline row: merged against the row's own snapshot; rows added since are not the form's.

    Rows merge even when the item's version is unchanged: the default version covers only the
    item's own fields, not its inline rows."""

    edit_item = None  # the parent item, set by MergingFormSetMixin

    def opened_fields(self, base):
        if self.instance.pk is None:
            pk = self.data.get(self.add_prefix(self.instance._meta.pk.name))
            if pk and str(pk) in base.get("i", {}).get(self.prefix.rsplit("-", 1)[0], {}):
                raise ValidationError("Someone else removed this row after you opened the form. Tick “Delete” "
                                      "to leave it removed, or add it again as a new row.", code="row_gone")
            return None
        rows = base.get("i", {}).get(self.prefix.rsplit("-", 1)[0], {})
        return rows.get(str(self.instance.pk))

    def validate_unique(self):
        """Also ask the database about unique constraints naming the parent (one byline row per author).

        Django checks those only among the formset's own rows (the parent's key is left out of the row's
        own checks), and a row someone else added after the form was opened is not among them: the same
        author added on both sides reached the INSERT and failed there, a 500."""
        super().validate_unique()
        parent = {name for name, field in self.fields.items() if isinstance(field, InlineForeignKeyField)}
        exclude = self._get_validation_exclusions()
        for constraint in self.instance._meta.constraints:
            if isinstance(constraint, UniqueConstraint) and parent & set(constraint.fields):
                try:
                    constraint.validate(type(self.instance), self.instance, exclude=exclude)
                except ValidationError as error:
                    self._update_errors(error)


class MergingFormSetMixin:
    """An inline formset that lets rows removed meanwhile stay removed.

    A row the form showed and someone else deleted (the API replaces a byline's rows) has no
    instance any more; Django would refuse its form ("Select a valid choice"). If the editor left
    the row as it was, it is marked deleted, which saves nothing for it; if they changed it, the
    form says the row was removed meanwhile, and the editor decides.
    """

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.rows_gone = []
        base = opened_base(self.data, self.instance) if self.is_bound else None
        rows = base.get("i", {}).get(self.prefix) if base else None
        if rows:
            self._drop_rows_gone(rows)

    def _drop_rows_gone(self, rows: dict) -> None:
        existing = {str(pk) for pk in self.get_queryset().values_list("pk", flat=True)}
        pk_name, data = self.model._meta.pk.name, self.data.copy()
        for index in range(self.initial_form_count()):
            key = self.add_prefix(index) + "-"
            pk = self.data.get(key + pk_name)
            opened = rows.get(pk)
            if opened is None or pk in existing:
                continue
            if all(normalised(self.data.get(key + name, "")) == value for name, value in opened.items()):
                data[key + "DELETE"] = "on"
                self.rows_gone.append(pk)
        self.data = data

    def _construct_form(self, i, **kwargs):
        form = super()._construct_form(i, **kwargs)
        form.edit_item = self.instance
        return form


# --- The admin ------------------------------------------------------------------------------------

class EditConflictAdmin(EditingAdmin):
    """A ModelAdmin mixin: change forms carry their opened-at version and merge or refuse stale saves."""

    def edit_version(self, obj) -> str:
        """The item's version (posts and digests: the API's ETag); by default a digest of its own fields."""
        state = {field.name: field.value_to_string(obj) for field in obj._meta.concrete_fields}
        return state_version(state)

    def _version(self, request, obj) -> str:
        """`obj`'s version, computed once per request (a digest's is its whole API detail). On a
        save it is first asked for after ``get_object`` locked the row, and a save that is refused
        changed nothing, so one value holds for the whole request."""
        versions = request.__dict__.setdefault("_edit_versions", {})
        key = (obj._meta.label_lower, obj.pk)
        if key not in versions:
            versions[key] = self.edit_version(obj)
        return versions[key]

    def _may_edit(self, request, obj) -> bool:
        return obj is not None and self.has_change_permission(request, obj)

    def get_form(self, request, obj=None, **kwargs):
        if not self._may_edit(request, obj):
            return super().get_form(request, obj, **kwargs)
        base = kwargs.get("form", self.form)
        attrs = _opened_at_fields()
        if request.method == "POST":
            attrs["edit_version_now"] = self._version(request, obj)
        kwargs["form"] = type(base.__name__, (OpenedAtForm, base), attrs)
        return super().get_form(request, obj, **kwargs)

    def get_fieldsets(self, request, obj=None):
        fieldsets = super().get_fieldsets(request, obj)
        if not self._may_edit(request, obj):
            return fieldsets
        ours = {EDIT_PANEL, EDIT_VERSION, EDIT_BASE}
        fieldsets = [(name, {**options, "fields": [f for f in options["fields"] if f not in ours]})
                     for name, options in fieldsets]
        first_name, first = fieldsets[0]
        fieldsets[0] = (first_name, {**first, "fields": [EDIT_PANEL, *first["fields"], EDIT_VERSION, EDIT_BASE]})
        return fieldsets

    def get_formsets_with_inlines(self, request, obj=None):
        for formset, inline in super().get_formsets_with_inlines(request, obj):
            if obj is not None:
                form = type(formset.form.__name__, (InlineMergingForm, formset.form), {})
                formset = type(formset.__name__, (MergingFormSetMixin, formset), {"form": form})
            yield formset, inline

    def get_object(self, request, object_id, from_field=None):
        """On a save, the item's row is locked before it is read, until the save's transaction ends."""
        using = router.db_for_write(self.model)
        if request.method == "POST" and transaction.get_connection(using).in_atomic_block:
            field = self.model._meta.pk if from_field is None else self.model._meta.get_field(from_field)
            try:
                value = field.to_python(object_id)
            except ValidationError:
                value = None
            if value is not None:
                # FOR NO KEY UPDATE, as the project's other row locks (digests' lock_cited_references):
                # it excludes other saves of the row but not inserts of rows that refer to it.
                rows = (self.model._base_manager.using(using).select_for_update(no_key=True)
                        .filter(**{field.name: value}))
                list(rows.values_list("pk"))
        return super().get_object(request, object_id, from_field)

    def render_change_form(self, request, context, add=False, change=False, form_url="", obj=None):
        form = context["adminform"].form
        if EDIT_BASE in form.fields and obj is not None:
            formsets = [inline.formset for inline in context.get("inline_admin_formsets", ())]
            if not form.is_bound:
                form.initial[EDIT_VERSION] = self._version(request, obj)
                form.initial[EDIT_BASE] = sign(self._opened(request, form, formsets, obj), obj)
            else:
                self._show_conflicts(request, form, formsets, obj)
        return super().render_change_form(request, context, add, change, form_url, obj)

    def _opened(self, request, form, formsets, obj) -> dict:
        rows = {formset.prefix: {str(row.instance.pk): form_state(row, row.instance) for row in formset.initial_forms}
                for formset in formsets}
        return {"v": self._version(request, obj), "at": timezone.now().isoformat(), "f": form_state(form, obj),
                "i": rows}

    def _show_conflicts(self, request, form, formsets, obj) -> None:
        """A save refused for conflicts: say who changed what, show both values, carry the new version."""
        base = opened_base(form.data, obj)
        forms_ = [(form, None), *((row, formset.prefix) for formset in formsets for row in formset.initial_forms)]
        conflicted = [(row, prefix) for row, prefix in forms_ if row.is_bound and getattr(row, "edit_conflicts", ())]
        if not base or not conflicted:
            return
        base = copy.deepcopy(base)
        panel = []
        for row, prefix in conflicted:
            opened = base["f"] if prefix is None else base["i"][prefix][str(row.instance.pk)]
            for name in row.edit_conflicts:
                opened[name] = row.edit_current[name]  # the next save starts from theirs: what it sends is chosen
                label = row.fields[name].label or name
                label = label if prefix is None else f"{label} ({row.instance._meta.verbose_name} {row.instance})"
                panel.append((label, RESOLVE + row.add_prefix(name), row.edit_typed[name], shown(row.instance, name)))
        base["v"] = None  # a mixture of then and now, no one version
        data = form.data.copy()
        data[EDIT_VERSION], data[EDIT_BASE] = self._version(request, obj), sign(base, obj)
        form.data = data
        form.fields[EDIT_PANEL].widget.conflicts = panel
        who = self.changed_by(obj, base.get("at"))
        self.message_user(request, f"Not saved: {who}, after you opened this {obj._meta.verbose_name}, and you both "
                                   "changed the fields shown side by side below. Your input is kept: choose, for each, "
                                   "yours (edit it if you like) or theirs, and save again.", messages.ERROR)

    def save_related(self, request, form, formsets, change):
        super().save_related(request, form, formsets, change)
        merged = [form.fields[name].label or name for name in getattr(form, "edit_merged", ())]
        merged += [f"{row.fields[name].label or name} of {row.instance._meta.verbose_name} “{row.instance}”"
                   for formset in formsets for row in formset.initial_forms
                   for name in getattr(row, "edit_merged", ())]
        merged += [f"the removal of {len(formset.rows_gone)} {formset.model._meta.verbose_name} row(s)"
                   for formset in formsets if getattr(formset, "rows_gone", None)]
        if change and merged:
            base = opened_base(form.data, form.instance) or {}
            self.message_user(request, f"This {form.instance._meta.verbose_name} had changed since you opened it "
                                       f"({self.changed_by(form.instance, base.get('at'))}). Kept their changes to: "
                                       f"{', '.join(str(m) for m in merged)}; saved yours on top.", messages.WARNING)

    def changed_by(self, obj, since: str | None) -> str:
        """Who changed `obj` after `since` and when, from its revisions or else the admin's log."""
        after = datetime.datetime.fromisoformat(since) if since else None
        if reversion.is_registered(type(obj)):
            rows = Version.objects.get_for_object(obj).order_by("-revision__date_created")
            rows = rows.filter(revision__date_created__gt=after) if after else rows
            changes = [(v.revision.user, v.revision.date_created)
                       for v in rows.select_related("revision__user")[:CHANGES_NAMED]]
        else:
            rows = LogEntry.objects.filter(content_type=ContentType.objects.get_for_model(obj),
                                           object_id=str(obj.pk)).order_by("-action_time")
            rows = rows.filter(action_time__gt=after) if after else rows
            changes = [(e.user, e.action_time) for e in rows.select_related("user")[:CHANGES_NAMED]]
        if not changes:
            return "it was changed by a process that records no author (ingestion or a script)"
        names = sorted({user.get_full_name() or user.get_username() if user else "someone" for user, _ in changes})
        latest = changes[0][1]  # newest first
        return f"{', '.join(names)} changed it, last at {timezone.localtime(latest):%Y-%m-%d %H:%M}"
