"""The two endpoints each change form with edit conflicts talks to, mounted by ``EditingAdmin.get_urls``
under the item's admin URL (``<id>/presence/``, ``<id>/autosave/``). The admin has already checked
who asks and what they may change; these only read and answer (JSON, or an empty 204)."""
import json

from django.conf import settings
from django.http import HttpResponse, JsonResponse
from django.utils import timezone

from . import presence as presence_
from .models import Autosave

#: Form fields never kept: the CSRF token is the session's, not the editor's text.
NOT_KEPT = {"csrfmiddlewaretoken"}
#: The most fields a change form posts (a digest with many inline rows has a few hundred).
MAX_FIELDS = 5000


def shown_time(moment) -> str:
    """A moment as the admin's messages show it: the hour and minute, in the site's time zone."""
    return f"{timezone.localtime(moment):%H:%M}"


def presence(request, item):
    """POST: the asking editor has the form open (``leaving``: closed it); answers who else has it open."""
    if request.method != "POST":
        return _not_allowed("POST")
    if request.POST.get("leaving"):
        presence_.leave(item, request.user)
        return HttpResponse(status=204)
    presence_.beat(item, request.user)
    return JsonResponse({"others": [{"name": entry["name"], "since": shown_time(entry["since"])}
                                    for entry in presence_.others(item, request.user)]})


def autosave(request, item):
    """GET: the asking editor's autosave of the item (404: none); POST ``fields``: keep it; DELETE: discard it."""
    mine = Autosave.objects.of(request.user, item)
    if request.method == "GET":
        kept = mine.first()
        if kept is None:
            return JsonResponse({"error": "You have no unsaved changes here."}, status=404)
        return JsonResponse({"saved_at": kept.saved_at.isoformat(), "shown": shown_time(kept.saved_at),
                             "fields": kept.fields})
    if request.method == "DELETE":
        mine.delete()
        return HttpResponse(status=204)
    if request.method != "POST":
        return _not_allowed("GET, POST, DELETE")
    return _keep(request, item)


def _keep(request, item):
    limit = settings.EDITING_AUTOSAVE_MAX_BYTES
    # A form-encoded body is at most three times its text (percent-encoding): refused before it is read.
    if _content_length(request) > 3 * limit + 1024:
        return _too_large(limit)
    text = request.POST.get("fields", "")
    if len(text.encode()) > limit:
        return _too_large(limit)
    try:
        fields = _fields(text)
    except ValueError as error:
        return JsonResponse({"error": str(error)}, status=400)
    kept = Autosave.objects.keep(request.user, item, fields)
    return JsonResponse({"saved_at": kept.saved_at.isoformat(), "shown": shown_time(kept.saved_at)})


def _content_length(request) -> int:
    try:
        return int(request.META.get("CONTENT_LENGTH") or 0)
    except ValueError:  # malformed: Django reads such a body as empty
        return 0


def _fields(text: str) -> list:
    """The form's ``[name, value]`` pairs from their JSON, or ValueError saying what is wrong."""
    try:
        pairs = json.loads(text)
    except (json.JSONDecodeError, RecursionError):  # RecursionError: "[[[[…" nested deeper than Python goes
        raise ValueError("“fields” must be the form's fields as JSON: a list of [name, value] pairs.") from None
    if not isinstance(pairs, list) or not all(
            isinstance(pair, list) and len(pair) == 2 and all(isinstance(part, str) for part in pair)
            for pair in pairs):
        raise ValueError("“fields” must be a list of [name, value] pairs of strings.")
    if any("\x00" in part for pair in pairs for part in pair):  # PostgreSQL's jsonb refuses it (a 500)
        raise ValueError("A field's value may not contain a NUL character.")
    if len(pairs) > MAX_FIELDS:
        raise ValueError(f"A change form has at most {MAX_FIELDS} fields.")
    return [pair for pair in pairs if pair[0] not in NOT_KEPT]


def _too_large(limit: int):
    return JsonResponse({"error": f"Unsaved changes are kept up to {limit // 1024} KiB; save the form instead."},
                        status=413)


def _not_allowed(allowed: str):
    response = JsonResponse({"error": f"Use {allowed}."}, status=405)
    response["Allow"] = allowed
    return response
