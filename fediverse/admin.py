from django.contrib import admin

from .models import ActorKey


@admin.register(ActorKey)
class ActorKeyAdmin(admin.ModelAdmin):
    """Read-only: who has a key and its public half. The private key is in no list, form or field."""

    list_display = ["handle", "created_at"]
    search_fields = ["handle"]
    fields = ["handle", "public_key_pem", "created_at"]
    readonly_fields = fields

    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False
