"""Creating and revoking API tokens.

The raw token exists only in the response that creates it: the admin shows it
once in a message and stores its digest. A token is never edited afterwards --
to change scopes, issue a new one and revoke the old.
"""
from axes.models import AccessAttempt
from django import forms
from django.contrib import admin, messages
from django.utils import timezone

from .lockout import UnlockingAccessAttemptAdmin
from .models import ApiToken

PUBLISH_PERMISSIONS = ("digests.publish_digest", "blog.publish_post")


class ApiTokenForm(forms.ModelForm):
    scopes = forms.MultipleChoiceField(
        choices=ApiToken.Scope.choices, widget=forms.CheckboxSelectMultiple, required=False
    )

    class Meta:
        model = ApiToken
        fields = ["user", "name", "scopes"]

    def clean(self):
        cleaned = super().clean()
        user = cleaned.get("user")
        if user and ApiToken.Scope.PUBLISH in cleaned.get("scopes", []):
            if not any(user.has_perm(perm) for perm in PUBLISH_PERMISSIONS):
                self.add_error("scopes", "Only Publishers can hold the publish scope.")
        return cleaned


@admin.register(ApiToken)
class ApiTokenAdmin(admin.ModelAdmin):
    form = ApiTokenForm
    list_display = ["name", "user", "prefix", "scope_list", "created_at", "last_used_at", "revoked_at"]
    list_filter = ["revoked_at"]
    list_select_related = ["user"]
    search_fields = ["name", "prefix", "user__username"]
    raw_id_fields = ["user"]
    actions = ["revoke"]

    def get_readonly_fields(self, request, obj=None):
        if obj is None:
            return ["prefix", "created_at", "last_used_at", "revoked_at"]
        return ["user", "name", "scope_list", "prefix", "created_at", "last_used_at", "revoked_at"]

    def get_fields(self, request, obj=None):
        if obj is None:
            return ["user", "name", "scopes"]
        return ["user", "name", "scope_list", "prefix", "created_at", "last_used_at", "revoked_at"]

    @admin.display(description="scopes")
    def scope_list(self, obj) -> str:
        return ", ".join(obj.scopes) or "—"

    def save_model(self, request, obj, form, change):
        if change:
            return  # tokens are immutable once issued
        token, raw = ApiToken.issue(form.cleaned_data["user"], form.cleaned_data["name"], form.cleaned_data["scopes"])
        obj.pk, obj.prefix = token.pk, token.prefix
        obj._state.adding = False
        self.message_user(
            request, f"Token created. Copy it now; it will not be shown again: {raw}", messages.WARNING
        )

    @admin.action(description="Revoke selected tokens", permissions=["change"])
    def revoke(self, request, queryset):
        count = queryset.filter(revoked_at__isnull=True).update(revoked_at=timezone.now())
        self.message_user(request, f"Revoked {count} token{'s' if count != 1 else ''}.", messages.SUCCESS)


# Failed sign-ins and lockouts (django-axes, visible to superusers): axes' own admin plus "unlock".
if admin.site.is_registered(AccessAttempt):
    admin.site.unregister(AccessAttempt)
admin.site.register(AccessAttempt, UnlockingAccessAttemptAdmin)
