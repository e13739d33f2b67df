"""How API answers are written: fast JSON, list pages rendered once, cache headers, conditional GETs."""
import datetime
import hashlib
import json
import re
from urllib.parse import quote

import orjson
from django.http import HttpRequest, HttpResponse
from django.urls import reverse
from django.utils.cache import get_conditional_response, patch_vary_headers
from django.utils.http import http_date, parse_etags
from ninja import Schema
from ninja.errors import HttpError
from ninja.renderers import BaseRenderer, NinjaJSONEncoder


PUBLIC_CACHE_CONTROL = "public, max-age=60"
PRIVATE_CACHE_CONTROL = "private, no-cache"


def cache_control(request: HttpRequest, public: bool = True) -> str:
    """Cache-Control of a read (docs/api.md, Caching).

    Whatever answers a request carrying a token is never stored by a shared cache, even a
    published object: ``private, no-cache`` (the client may keep it and must revalidate with
    its ETag). Only anonymous answers about published content are public.
    """
    if request.headers.get("Authorization") or not public:
        return PRIVATE_CACHE_CONTROL
    return PUBLIC_CACHE_CONTROL


def set_list_caching(request: HttpRequest, response: HttpResponse) -> None:
    response["Cache-Control"] = cache_control(request)
    patch_vary_headers(response, ["Authorization"])


def moment_text(value: datetime.datetime | None) -> str | None:
    """An aware datetime as the API writes it (Django's encoder: milliseconds only when there
    are microseconds, "Z" for UTC). List items store it as text already, which is cheaper
    than orjson calling back into ``JSONRenderer.default`` for each timestamp of a page."""
    if value is None:
        return None
    if value.tzinfo is datetime.timezone.utc:  # what the database gives: the quick way to the same text
        return value.isoformat(timespec="milliseconds" if value.microsecond else "seconds")[:-6] + "Z"
    text = value.isoformat()
    if value.microsecond:
        text = text[:23] + text[26:]
    return text[:-6] + "Z" if text.endswith("+00:00") else text


class JSONRenderer(BaseRenderer):
    """orjson, writing dates and times exactly as ninja's default renderer does (Django's
    encoder: milliseconds, "Z" for UTC), at a tenth of the cost of the json module."""

    media_type = "application/json"
    charset = "utf-8"
    _default = NinjaJSONEncoder().default

    @classmethod
    def default(cls, value):
        """Aware datetimes (every timestamp the API shows) and dates directly, the rest through ninja's encoder."""
        if type(value) is datetime.datetime and value.utcoffset() is not None:
            return moment_text(value)
        if type(value) is datetime.date:  # as Django's encoder writes it
            return value.isoformat()
        return cls._default(value)

    def render(self, request: HttpRequest, data, *, response_status: int) -> bytes:
        return orjson.dumps(data, default=self.default, option=orjson.OPT_PASSTHROUGH_DATETIME)


RENDERER = JSONRenderer()


def list_response(request: HttpRequest, page: dict) -> HttpResponse:
    """A page whose items are already plain dicts in the `Page[...Out]` shape, rendered once.

    Lists that build their items from ``.values()`` rows answer through here and
    skip ninja's response validation (a Python call per field of every item, the
    largest part of a list's cost); the operation's schema still documents the
    shape, and tests/api/test_list_shapes.py checks that the output validates
    against it unchanged.
    """
    body = RENDERER.render(request, page, response_status=200)
    response = HttpResponse(body, content_type="application/json; charset=utf-8")
    set_list_caching(request, response)
    return response


#: What ``reverse()`` leaves unquoted in a path segment, and a test for slugs made only of such characters.
SLUG_SAFE = "!$&'()*+,;=/~:@"
_PLAIN_SLUG = re.compile(r"[-A-Za-z0-9_.!$&'()*+,;=/~:@]*").fullmatch


def url_maker(viewname: str):
    """slug -> reverse(viewname, args=[slug]), reversing once per page instead of once per row."""
    marker = "__slug__"
    prefix, suffix = reverse(viewname, args=[marker]).split(marker)
    return lambda slug: prefix + (slug if _PLAIN_SLUG(slug) else quote(slug, safe=SLUG_SAFE)) + suffix


# --- Conditional GET ------------------------------------------------------

def detail_json(schema: type[Schema], obj) -> bytes:
    """`obj` as `schema` JSON: the body of a detail answer, and what its ETag is a digest of."""
    return json.dumps(schema.from_orm(obj).model_dump(mode="json"), cls=NinjaJSONEncoder).encode()


def etag_of(body: bytes) -> str:
    return '"%s"' % hashlib.sha256(body).hexdigest()[:32]


def conditional_json(request: HttpRequest, schema: type[Schema], obj, last_modified, public: bool) -> HttpResponse:
    """`obj` as `schema` JSON with ETag / Last-Modified / Cache-Control, or a bare 304.

    The ETag is a digest of the JSON itself, so it changes whenever anything
    shown changes, including related objects with no timestamp of their own.
    """
    body = detail_json(schema, obj)
    etag = etag_of(body)
    stamp = int(last_modified.timestamp())
    answer = get_conditional_response(request, etag=etag, last_modified=stamp)
    if answer is not None and answer.status_code == 412:
        raise HttpError(412, "Precondition failed: the object has changed.")
    if answer is None:
        answer = HttpResponse(body, content_type="application/json; charset=utf-8")
    answer["ETag"] = etag
    answer["Last-Modified"] = http_date(stamp)
    answer["Cache-Control"] = cache_control(request, public)
    patch_vary_headers(answer, ["Authorization"])
    return answer


def require_unchanged(request: HttpRequest, schema: type[Schema], current) -> None:
    """Honour ``If-Match`` on a write: 412 unless the client's ETag is that of `current` (as a GET shows it).

    Call it with the row locked (``select_for_update`` in the write's transaction), so two clients
    sending the same ETag cannot both pass: the second waits for the first's commit, then sees a new
    ETag. ``If-Match: *`` matches any existing object; weak ETags never match (RFC 9110 13.1.1).
    """
    header = request.headers.get("If-Match")
    if header is None:
        return
    etags = parse_etags(header)
    if etags == ["*"]:
        return
    if etag_of(detail_json(schema, current)) not in etags:
        raise HttpError(412, "Precondition failed: the object has changed since you read it. "
                             "GET it again and send its new ETag in If-Match.")


def written_json(schema: type[Schema], obj, status: int = 200) -> HttpResponse:
    """A write's answer: `obj` exactly as its detail GET shows it, with the ETag a next write's If-Match sends."""
    body = detail_json(schema, obj)
    response = HttpResponse(body, status=status, content_type="application/json; charset=utf-8")
    response["ETag"] = etag_of(body)
    response["Cache-Control"] = "private, no-store"
    return response
