"""Creating and revoking API tokens; each staff user's own preferences (``ProfileAdmin``).

The raw token exists only in the response that creates it: the admin shows it
once in a message and stores its digest. A token is never edited afterwards --
to change scopes, issue a new one and revoke the old.

Every staff user creates, sees and revokes their own tokens, with the scopes their
role allows (``accounts.models.scopes_for``); whoever holds the ``change_apitoken``
permission (superusers) manages everyone's.
"""
from axes.models import AccessAttempt
from django import forms
from django.contrib import admin, messages
from django.shortcuts import redirect
from django.urls import path
from django.utils import timezone

from .lockout import UnlockingAccessAttemptAdmin
from .models import ApiToken, Profile, scopes_for, time_zone_names


class ApiTokenForm(forms.ModelForm):
    scopes = forms.MultipleChoiceField(
        choices=ApiToken.Scope.choices, widget=forms.CheckboxSelectMultiple, required=False,
        help_text="Only the scopes your role allows are offered: Editors read:drafts and write:content, "
                  "Publishers also publish (docs/api.md, Authentication).",
    )
    current_user = None  # set per request by ApiTokenAdmin.get_form

    class Meta:
        model = ApiToken
        fields = ["user", "name", "scopes"]

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        if "user" not in self.fields and self.current_user is not None:  # staff: always their own token
            allowed = scopes_for(self.current_user)
            self.fields["scopes"].choices = [(v, label) for v, label in ApiToken.Scope.choices if v in allowed]

    def clean(self):
        cleaned = super().clean()
        user = cleaned.get("user") or self.current_user
        refused = [scope for scope in cleaned.get("scopes", []) if user and scope not in scopes_for(user)]
        if ApiToken.Scope.PUBLISH in refused:
            self.add_error("scopes", "Only Publishers can hold the publish scope.")
        elif refused:
            self.add_error("scopes", f"{user}'s role does not allow {', '.join(refused)}.")
        return cleaned


@admin.register(ApiToken)
class ApiTokenAdmin(admin.ModelAdmin):
    form = ApiTokenForm
    list_display = ["name", "user", "prefix", "scope_list", "created_at", "last_used_at", "revoked_at"]
    list_filter = ["revoked_at"]
    list_select_related = ["user"]
    search_fields = ["name", "prefix", "user__username"]
    autocomplete_fields = ["user"]
    actions = ["revoke"]

    def manages_all(self, request) -> bool:
        return request.user.has_perm("accounts.change_apitoken")

    def get_queryset(self, request):
        tokens = super().get_queryset(request)
        return tokens if self.manages_all(request) else tokens.filter(user=request.user)

    def _own(self, request, obj) -> bool:
        return request.user.is_active and request.user.is_staff and (obj is None or obj.user_id == request.user.pk)

    def has_module_permission(self, request):
        return self.manages_all(request) or self._own(request, None)

    def has_view_permission(self, request, obj=None):
        return super().has_view_permission(request, obj) or self._own(request, obj)

    def has_add_permission(self, request):
        return super().has_add_permission(request) or self._own(request, None)

    def has_change_permission(self, request, obj=None):
        """Change means revoke: tokens are immutable once issued."""
        return super().has_change_permission(request, obj) or self._own(request, obj)

    def get_form(self, request, obj=None, **kwargs):
        form = super().get_form(request, obj, **kwargs)
        return type(form.__name__, (form,), {"current_user": request.user})

    def get_readonly_fields(self, request, obj=None):
        if obj is None:
            return ["prefix", "created_at", "last_used_at", "revoked_at"]
        return ["user", "name", "scope_list", "prefix", "created_at", "last_used_at", "revoked_at"]

    def get_fields(self, request, obj=None):
        if obj is None:
            return ["user", "name", "scopes"] if self.manages_all(request) else ["name", "scopes"]
        return ["user", "name", "scope_list", "prefix", "created_at", "last_used_at", "revoked_at"]

    @admin.display(description="scopes")
    def scope_list(self, obj) -> str:
        return ", ".join(obj.scopes) or "—"

    def save_model(self, request, obj, form, change):
        if change:
            return  # tokens are immutable once issued
        user = form.cleaned_data.get("user") or request.user
        token, raw = ApiToken.issue(user, form.cleaned_data["name"], form.cleaned_data["scopes"])
        obj.pk, obj.prefix = token.pk, token.prefix
        obj._state.adding = False
        self.message_user(
            request, f"Token created. Copy it now; it will not be shown again: {raw}", messages.WARNING
        )

    @admin.action(description="Revoke selected tokens", permissions=["change"])
    def revoke(self, request, queryset):
        """Only tokens the user may see (get_queryset): staff revoke their own."""
        count = queryset.filter(revoked_at__isnull=True).update(revoked_at=timezone.now())
        self.message_user(request, f"Revoked {count} token{'s' if count != 1 else ''}.", messages.SUCCESS)


class ProfileForm(forms.ModelForm):
    time_zone = forms.ChoiceField(choices=lambda: [(name, name) for name in time_zone_names()],
                                  help_text=Profile._meta.get_field("time_zone").help_text)

    class Meta:
        model = Profile
        fields = ["time_zone"]


@admin.register(Profile)
class ProfileAdmin(admin.ModelAdmin):
    """Every staff user edits their own preferences (``mine/`` makes them on first visit); whoever holds
    ``change_profile`` (superusers) sees everyone's."""

    form = ProfileForm
    list_display = ["user", "time_zone"]
    list_select_related = ["user"]
    readonly_fields = ["user"]
    fields = ["user", "time_zone"]

    def manages_all(self, request) -> bool:
        return request.user.has_perm("accounts.change_profile")

    def _own(self, request, obj) -> bool:
        return request.user.is_active and request.user.is_staff and (obj is None or obj.user_id == request.user.pk)

    def get_queryset(self, request):
        profiles = super().get_queryset(request)
        return profiles if self.manages_all(request) else profiles.filter(user=request.user)

    def has_module_permission(self, request):
        return self.manages_all(request) or self._own(request, None)

    def has_view_permission(self, request, obj=None):
        return super().has_view_permission(request, obj) or self._own(request, obj)

    def has_change_permission(self, request, obj=None):
        return super().has_change_permission(request, obj) or self._own(request, obj)

    def has_add_permission(self, request):
        return False  # made by mine/, one per user

    def get_urls(self):
        mine = path("mine/", self.admin_site.admin_view(self.mine_view), name="accounts_profile_mine")
        return [mine, *super().get_urls()]

    def mine_view(self, request):
        """The signed-in user's own preferences, made with the defaults on first visit."""
        profile, _ = Profile.objects.get_or_create(user=request.user)
        return redirect("admin:accounts_profile_change", profile.pk)

    def changelist_view(self, request, extra_context=None):
        if not self.manages_all(request):
            return self.mine_view(request)
        return super().changelist_view(request, extra_context)


# Failed sign-ins and lockouts (django-axes, visible to superusers): axes' own admin plus "unlock".
if admin.site.is_registered(AccessAttempt):
    admin.site.unregister(AccessAttempt)
admin.site.register(AccessAttempt, UnlockingAccessAttemptAdmin)
