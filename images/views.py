"""Renditions served by the app itself, when they are on this machine's disk (``make run``; ``make up``
without a bucket). A rendition's name carries its original's content hash, so it is served as
immutable for a year (the edge keeps it as long: ``edge.keys``). With a bucket configured,
renditions are linked at the bucket's (or its CDN's) URL and this view answers 404. Originals
are never served here: they live in another storage, reached only through the admin."""
import re

from django.conf import settings
from django.core.files.storage import FileSystemStorage
from django.http import FileResponse, Http404
from django.views.decorators.http import etag, require_safe

from . import processing
from .renditions import public_storage

#: What a rendition's name looks like (``Image.rendition_name``); nothing else is served.
NAME = re.compile(r"[0-9a-f]{64}/v\d+-\d+\.(avif|webp|jpg|png)")
MIME_BY_EXTENSION = {extension: processing.MIME[fmt] for fmt, extension in processing.EXTENSION.items()}


@require_safe
@etag(lambda request, name: name.replace("/", "-"))
def rendition(request, name: str):
    storage = public_storage()
    match = NAME.fullmatch(name)
    if match is None or not isinstance(storage, FileSystemStorage):
        raise Http404("No such image.")
    try:
        stored = storage.open(name, "rb")
    except FileNotFoundError:
        raise Http404("No such image.") from None
    response = FileResponse(stored, content_type=MIME_BY_EXTENSION[match.group(1)])
    response["Cache-Control"] = settings.IMAGES_IMMUTABLE
    return response
