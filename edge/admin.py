"""Admin actions "Purge from the edge cache" on posts and digests, attached from here.

The content apps know nothing of the edge (it sits above them), so the action is
added to their registered admins; ``blog`` and ``digests`` come before ``edge``
in INSTALLED_APPS, so their admins exist when this module is discovered. The
purge is queued (``edge.tasks.purge_keys``), so the edge's retries apply.
"""
from django.contrib import admin, messages

from blog.models import Post
from digests.models import Digest

from . import affected
from .tasks import purge_keys


@admin.action(description="Purge selected from the edge cache (their pages and the listings showing them)",
              permissions=["change"])
def purge_from_edge(modeladmin, request, queryset):
    keys = sorted(affected.keys_for_objects(queryset))
    purge_keys.delay(keys)
    modeladmin.message_user(request, f"Purge of {len(keys)} edge cache key(s) queued: {' '.join(keys)}",
                            messages.SUCCESS)


def offer_purge() -> None:
    for model in (Post, Digest):
        model_admin = admin.site.get_model_admin(model)
        if purge_from_edge not in model_admin.actions:
            model_admin.actions = [*model_admin.actions, purge_from_edge]


offer_purge()
