"""The edit bar's one view: *Purge from the edge*, for Publishers."""
from django.contrib import messages
from django.contrib.admin.views.decorators import staff_member_required
from django.core.exceptions import PermissionDenied
from django.http import Http404
from django.shortcuts import get_object_or_404, redirect
from django.urls import reverse
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_POST

from edge import affected, outbox

from .bar import KINDS, may_purge


@require_POST
@staff_member_required
def purge(request, kind: str, pk: int):
    """Record the purge of one object's pages and the listings showing it, then go back to the page.

    The same keys as the admin action and ``purge_edge --object`` (``edge.affected.keys_for_objects``),
    recorded in the outbox so a worker sends them until the edge confirms. A POST with the CSRF
    token only: a GET (a prefetch, a crawler following a link) answers 405 and purges nothing.
    """
    model = KINDS.get(kind)
    if model is None:
        raise Http404("Nothing of that kind is purged from here.")
    obj = get_object_or_404(model, pk=pk)
    if not may_purge(request.user, obj):
        raise PermissionDenied("Only Publishers purge pages from the edge.")
    keys = sorted(affected.keys_for_objects([obj]))
    outbox.record(keys)
    messages.success(request, f"Purge of {len(keys)} edge cache key(s) queued: {' '.join(keys)}")
    return redirect(back_to(request, obj))


def back_to(request, obj) -> str:
    """The page the form was on (``next``), if it is on this site; else the object's page or the home page."""
    target = request.POST.get("next", "")
    if url_has_allowed_host_and_scheme(target, allowed_hosts={request.get_host()}, require_https=request.is_secure()):
        return target
    return obj.get_absolute_url() if hasattr(obj, "get_absolute_url") else reverse("home")
