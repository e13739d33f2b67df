"""``EditingAdmin``: presence and autosave on an admin's change forms (``EditConflictAdmin`` includes it).

It adds the item's two endpoints to the admin's URLs, its script to the admin's media, and to the
change form a panel (``admin/editing/change_form.html``, which extends whatever template the admin
would have used, so a model's own change form template stays in force) naming the endpoints in
``data-`` attributes: the page has no inline script, and the policy stays strict.
"""
from django import forms
from django.conf import settings
from django.contrib.admin.utils import unquote
from django.contrib.contenttypes.models import ContentType
from django.core.exceptions import ValidationError
from django.http import Http404, JsonResponse
from django.template.loader import select_template
from django.urls import path, reverse
from django.views.decorators.cache import never_cache
from django.views.decorators.csrf import csrf_protect

from . import views
from .models import Autosave

TEMPLATE = "admin/editing/change_form.html"


class EditingAdmin:
    """A ModelAdmin mixin: who else has an item open, and what an editor typed kept until they save it."""

    @property
    def media(self):
        return super().media + forms.Media(js=["editing/editing.js"], css={"all": ["editing/editing.css"]})

    def get_urls(self):
        info = self.opts.app_label, self.opts.model_name
        return [
            path("<path:object_id>/presence/", self._editing_endpoint(views.presence), name="%s_%s_presence" % info),
            path("<path:object_id>/autosave/", self._editing_endpoint(views.autosave), name="%s_%s_autosave" % info),
            *super().get_urls(),
        ]

    def _editing_endpoint(self, view):
        """`view` for staff who may change the item; JSON 403s, never the sign-in page (a script reads them)."""
        @never_cache
        @csrf_protect
        def endpoint(request, object_id):
            if not self.admin_site.has_permission(request):
                return JsonResponse({"error": "signed_out", "message": "Your session has ended: sign in again."},
                                    status=403)
            item = self._editing_item(request, object_id)
            if not self.has_change_permission(request, item):
                return JsonResponse({"error": "forbidden", "message": "You may not change this item."}, status=403)
            return view(request, item)
        return endpoint

    def _editing_item(self, request, object_id):
        """The item, as the admin's queryset shows it to this user (404 otherwise). Never locked: the
        endpoints write only the cache and the editor's autosave, not the item."""
        queryset = self.get_queryset(request)
        try:
            return queryset.get(pk=queryset.model._meta.pk.to_python(unquote(object_id)))
        except (ValidationError, ValueError, queryset.model.DoesNotExist):
            raise Http404("No such item.") from None

    def render_change_form(self, request, context, add=False, change=False, form_url="", obj=None):
        response = super().render_change_form(request, context, add, change, form_url, obj)
        if change and obj is not None and context.get("has_change_permission") and not add:
            response.context_data["editing_parent"] = select_template(
                [response.template_name] if isinstance(response.template_name, str) else response.template_name)
            response.context_data["editing"] = self._editing_context(request, obj, context["adminform"].form)
            response.template_name = TEMPLATE
        return response

    def _editing_context(self, request, obj, form) -> dict:
        info = self.opts.app_label, self.opts.model_name
        args = [obj.pk]
        # A form shown again (refused save, invalid input) already holds the editor's text: nothing to offer.
        kept = None if form.is_bound else Autosave.objects.of(request.user, obj).only("saved_at").first()
        return {
            "presence_url": reverse("admin:%s_%s_presence" % info, args=args, current_app=self.admin_site.name),
            "autosave_url": reverse("admin:%s_%s_autosave" % info, args=args, current_app=self.admin_site.name),
            "kind": self.opts.verbose_name,
            "user": request.user.pk,
            "heartbeat_seconds": settings.EDITING_PRESENCE_HEARTBEAT_SECONDS,
            "autosave_seconds": settings.EDITING_AUTOSAVE_SECONDS,
            "saved_at": views.shown_time(kept.saved_at) if kept else "",
        }

    def save_model(self, request, obj, form, change):
        """Saved: the editor's autosave served its purpose (in the save's transaction: kept if it fails)."""
        super().save_model(request, obj, form, change)
        if change:
            Autosave.objects.of(request.user, obj).delete()

    def delete_model(self, request, obj):
        """Deleted: nobody's autosave of it can be restored any more."""
        Autosave.objects.about(obj).delete()
        super().delete_model(request, obj)

    def delete_queryset(self, request, queryset):
        """The list's bulk delete: as ``delete_model``, for each item (a reused id must offer no one's text)."""
        Autosave.objects.filter(content_type=ContentType.objects.get_for_model(queryset.model),
                                object_id__in=[str(pk) for pk in queryset.values_list("pk", flat=True)]).delete()
        super().delete_queryset(request, queryset)
