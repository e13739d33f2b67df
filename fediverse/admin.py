from django.contrib import admin

from .models import ActorKey


@admin.register(ActorKey)
class ActorKeyAdmin(admin.ModelAdmin):
    """Read-only: who has a key and its public half. The private key is in no list, form or field."""

    list_display = ["handle", "created_at"]
    search_fields = ["handle"]
    fields = ["handle", "public_key_pem", "created_at"]
    readonly_fields = fields

    def lookup_allowed(self, lookup, value, request=None) -> bool:
        """No filtering by the private key from the URL (``?private_key_pem__startswith=…`` would read it
        out a character at a time through the result count)."""
        return not lookup.startswith("private_key_pem") and super().lookup_allowed(lookup, value, request)

    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False
