"""Admin actions "Purge from the edge cache" on posts and digests, attached from here.

The content apps know nothing of the edge (it sits above them), so the action is
added to their registered admins; ``blog`` and ``digests`` come before ``edge``
in INSTALLED_APPS, so their admins exist when this module is discovered. The
purge is recorded (``edge.outbox``), so it is sent, and retried, until the edge
confirms it. Purges still owed are listed under *Edge cache → Pending edge purges*.
"""
from django.contrib import admin, messages

from blog.models import Post
from digests.models import Digest

from . import affected, outbox
from .models import Purge


@admin.action(description="Purge selected from the edge cache (their pages and the listings showing them)",
              permissions=["publish"])  # Publishers, as on the edit bar (editbar.bar.may_purge)
def purge_from_edge(modeladmin, request, queryset):
    keys = sorted(affected.keys_for_objects(queryset))
    outbox.record(keys)
    modeladmin.message_user(request, f"Purge of {len(keys)} edge cache key(s) queued: {' '.join(keys)}",
                            messages.SUCCESS)


class RetriedFilter(admin.SimpleListFilter):
    """Purges that failed at least once (``Purge.objects.retried``): where the newsroom's count links."""

    title = "attempts"
    parameter_name = "retried"

    def lookups(self, request, model_admin):
        return [("yes", "Failed at least once")]

    def queryset(self, request, queryset):
        return queryset.retried() if self.value() == "yes" else queryset


@admin.register(Purge)
class PurgeAdmin(admin.ModelAdmin):
    """Purges the edge still owes: normally none for more than a moment; rows that stay say which node fails."""

    list_display = ("created_at", "key_count", "attempts", "next_attempt_at", "last_error")
    list_filter = (RetriedFilter,)
    readonly_fields = ("keys", "targets", "created_at", "next_attempt_at", "attempts", "last_error")

    @admin.display(description="keys")
    def key_count(self, purge: Purge) -> int:
        return len(purge.keys)

    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False


def offer_purge() -> None:
    for model in (Post, Digest):
        model_admin = admin.site.get_model_admin(model)
        if purge_from_edge not in model_admin.actions:
            model_admin.actions = [*model_admin.actions, purge_from_edge]


offer_purge()
