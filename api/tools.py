"""What every API router shares: errors, token auth, scopes, throttles, pagination, caching.

Kept apart from ``repojournal.api`` (which mounts the routers) so the app
routers can import it without an import cycle.
"""
import datetime
import hashlib
import json
import os
import re
from typing import Generic, TypeVar, get_origin
from urllib.parse import quote

import orjson
from pydantic import BaseModel
from redis.exceptions import NoScriptError

from django.conf import settings
from django.core import signing
from django.core.cache import DEFAULT_CACHE_ALIAS, caches
from django.core.exceptions import EmptyResultSet
from django.db import connections
from django.db.models import IntegerField, Q
from django.db.models.expressions import RawSQL
from django.http import HttpRequest, HttpResponse
from django.urls import reverse
from django.utils import timezone
from django.utils.cache import get_conditional_response, patch_vary_headers
from django.utils.http import http_date
from ninja import Field, Schema
from ninja.errors import AuthenticationError, HttpError
from ninja.renderers import BaseRenderer, NinjaJSONEncoder
from ninja.security import HttpBearer
from ninja.throttling import SimpleRateThrottle

from accounts.models import ApiToken

from publishing.compiled import planned_per_run

from .types import Moment

DEFAULT_PAGE_SIZE = 50
MAX_PAGE_SIZE = 200
#: `count` is exact up to this many objects; past it a list says so (`count_is_exact: false`)
#: instead of counting the whole archive on every page.
COUNT_CAP = 1000
CURSOR_SALT = "repojournal.api.cursor"
PUBLIC_CACHE_CONTROL = "public, max-age=60"
PRIVATE_CACHE_CONTROL = "private, no-cache"


# --- Errors ---------------------------------------------------------------

class FieldError(Schema):
    field: str = Field(..., description="Dotted path of the offending input, e.g. body.references.0.number.")
    message: str


class ErrorOut(Schema):
    """The one shape of every 4xx answer."""

    detail: str
    errors: list[FieldError] = Field(default_factory=list, description="Per-field problems (validation only).")


def error_responses(*codes: int) -> dict[int, type[ErrorOut]]:
    """OpenAPI entries for the error statuses an operation can answer with."""
    return {code: ErrorOut for code in sorted({400, 422, 429, *codes})}


# --- Authentication and scopes -------------------------------------------

class Anonymous:
    """request.auth for a request without a token (truthy, so ninja lets it through)."""

    user = None

    def has_scope(self, scope: str) -> bool:
        return False


ANONYMOUS = Anonymous()


class TokenAuth(HttpBearer):
    """``Authorization: Bearer <token>``; a presented but unknown or revoked token is a 401.

    ``TokenAuth(optional=True)`` is ``[TokenAuth(), anonymous]`` as one callback (no Authorization
    header: anonymous), because ninja inspects every auth callback on every request. One class
    either way, so OpenAPI names one security scheme.
    """

    def __init__(self, optional: bool = False):
        super().__init__()
        self.optional = optional

    def __call__(self, request: HttpRequest):
        if self.optional and not request.headers.get("Authorization"):
            return ANONYMOUS
        found = super().__call__(request)
        return anonymous(request) if found is None and self.optional else found  # refuses a non-Bearer header

    def authenticate(self, request: HttpRequest, token: str):
        found = ApiToken.objects.authenticate(token.strip())
        if found is None:
            raise AuthenticationError(401, "Invalid or revoked API token.")
        return found


def anonymous(request: HttpRequest):
    """On public operations (TokenAuth(optional=True)): no Authorization header means anonymous."""
    if request.headers.get("Authorization"):
        raise AuthenticationError(401, "Send API tokens as “Authorization: Bearer <token>”.")
    return ANONYMOUS


token_auth = TokenAuth()
OPTIONAL_AUTH = [TokenAuth(optional=True)]
#: For public operations: tell OpenAPI clients the token is optional.
PUBLIC = {"auth": OPTIONAL_AUTH, "openapi_extra": {"security": [{}]}}  # ninja appends this to [TokenAuth]


def can_read_drafts(request: HttpRequest) -> bool:
    return request.auth.has_scope(ApiToken.Scope.READ_DRAFTS)


def visible(request: HttpRequest, queryset, now=None):
    """Everything for read:drafts tokens, otherwise only what is published (at `now`: see
    ``PublishableQuerySet.published``; querysets of other models decide by the current time)."""
    if can_read_drafts(request):
        return queryset
    return queryset.published() if now is None else queryset.published(now)


def with_status(request: HttpRequest, queryset, status):
    """Filter by workflow status; asking for anything unpublished needs read:drafts."""
    if status is None:
        return queryset
    if status != "published" and not can_read_drafts(request):
        raise HttpError(403, "Filtering by an unpublished status needs a token with the “read:drafts” scope.")
    return queryset.filter(status=status)


# --- Throttling -----------------------------------------------------------

#: The sliding-window log of SimpleRateThrottle as one atomic Redis command: drop the requests
#: that left the window, count the rest, and record this one if there is room. Returns
#: {1} if allowed, else {0, requests in the window, the oldest one's time}. KEYS[1]: the log (a sorted set
#: scored by time); ARGV: now, the window's start, the limit, the window in seconds, a unique member.
SLIDING_WINDOW_SCRIPT = """
redis.call("ZREMRANGEBYSCORE", KEYS[1], "-inf", ARGV[2])
local count = redis.call("ZCARD", KEYS[1])
if count < tonumber(ARGV[3]) then
    redis.call("ZADD", KEYS[1], ARGV[1], ARGV[5])
    redis.call("EXPIRE", KEYS[1], ARGV[4])
    return {1}
end
return {0, count, redis.call("ZRANGE", KEYS[1], 0, 0, "WITHSCORES")[2]}
"""


class SettingsRateThrottle(SimpleRateThrottle):
    """A throttle whose rate is read from settings.API_THROTTLE_RATES on every request,
    so deployments (and tests) change rates without re-importing the routers.

    On a Redis cache the check is one round trip (``SLIDING_WINDOW_SCRIPT``) instead of
    ninja's read and rewrite of the whole pickled log -- and it is atomic, so concurrent
    workers no longer overwrite each other's requests. Other caches (including Django's own
    RedisCache, which has no public way to lend its client) use ninja's code.
    """

    def __init__(self, scope: str):
        self.scope = scope

    def allow_request(self, request: HttpRequest) -> bool:
        self.rate = settings.API_THROTTLE_RATES[self.scope]
        self.num_requests, self.duration = _parsed_rate(self, self.rate)
        backend = caches[DEFAULT_CACHE_ALIAS]
        if not callable(getattr(backend, "client", None)):  # only our reader.cache_backend.RedisCache lends one
            return super().allow_request(request)
        self.key = self.get_cache_key(request)
        if self.key is None:
            return True
        return self._allow_in_redis(backend)

    def _allow_in_redis(self, backend) -> bool:
        key = backend.make_key(self.key)  # our own ASCII key: no need for validate_key's warnings
        client = backend.client(key, write=True)
        self.now = self.timer()
        args = (repr(self.now), repr(self.now - self.duration), self.num_requests, self.duration, os.urandom(16).hex())
        answer = _sliding_window(client, key, args)
        if answer[0]:
            return True
        # What ninja's wait() reads: the log, newest first (only its length and oldest entry count).
        count = answer[1]
        self.history = [self.now] * (count - 1) + [float(answer[2])] if count else []
        return self.throttle_failure()


#: rate -> (requests, seconds): ninja's parse_rate, once per rate rather than once per request.
_rates: dict = {}


def _parsed_rate(throttle: SimpleRateThrottle, rate: str | None):
    if rate not in _rates:
        _rates[rate] = throttle.parse_rate(rate)
    return _rates[rate]


#: SHA1 of SLIDING_WINDOW_SCRIPT, the name Redis runs it by.
SLIDING_WINDOW_SHA = hashlib.sha1(SLIDING_WINDOW_SCRIPT.encode()).hexdigest()


def _sliding_window(client, key: str, args: tuple):
    """SLIDING_WINDOW_SCRIPT by its SHA1 (one EVALSHA), loading it into a server that lacks it (new or
    restarted) and trying again -- what redis-py's Script object does, without its per-call overhead."""
    try:
        return client.evalsha(SLIDING_WINDOW_SHA, 1, key, *args)
    except NoScriptError:
        client.script_load(SLIDING_WINDOW_SCRIPT)
        return client.evalsha(SLIDING_WINDOW_SHA, 1, key, *args)


class PerIPThrottle(SettingsRateThrottle):
    def get_cache_key(self, request: HttpRequest):
        return f"api_throttle_{self.scope}_ip_{self.get_ident(request)}"


class PerTokenThrottle(SettingsRateThrottle):
    def get_cache_key(self, request: HttpRequest):
        token = getattr(request, "auth", None)
        if not isinstance(token, ApiToken):
            return None
        return f"api_throttle_{self.scope}_token_{token.pk}"


def throttles(kind: str) -> list[SettingsRateThrottle]:
    """Per-IP and per-token throttles for "list" (expensive queries) or "write" operations."""
    return [PerIPThrottle(f"{kind}_ip"), PerTokenThrottle(f"{kind}_token")]


# --- Cursor pagination ----------------------------------------------------

T = TypeVar("T")


class ListParams(BaseModel):
    """The paging parameters every list takes. A plain pydantic model rather than a ninja ``Schema``:
    query parameters are always a dict, so Schema's wrap validator (which lets it read model
    instances) only cost time on every list request; the OpenAPI schema is the same."""

    cursor: str | None = Field(None, description="The next_cursor of the previous page. Opaque.")
    limit: int = Field(
        DEFAULT_PAGE_SIZE, ge=1, le=MAX_PAGE_SIZE, description=f"Page size, at most {MAX_PAGE_SIZE}."
    )
    updated_since: Moment | None = Field(
        None, description="Only objects changed at or after this time (ISO 8601; UTC if no offset)."
    )


class Page(Schema, Generic[T]):
    items: list[T]
    count: int = Field(..., description=(
        f"How many objects match the filters, over all pages, counted up to {COUNT_CAP}: "
        f"when more match, this is {COUNT_CAP} and `count_is_exact` is false."
    ))
    count_is_exact: bool = Field(..., description=f"False when more than {COUNT_CAP} objects match.")
    next_cursor: str | None = Field(..., description="Pass as `cursor` for the next page; null on the last.")


def reject_unknown_params(request: HttpRequest, params: Schema) -> None:
    """Refuse parameters the list does not know, and repeats of single-valued ones.

    Ignoring them would answer a different question than the one asked.
    """
    fields = {field.alias or name: field for name, field in type(params).model_fields.items()}
    unknown = sorted(set(request.GET) - set(fields))
    if unknown:
        raise HttpError(
            400, f"Unknown query parameter(s): {', '.join(unknown)}. Allowed: {', '.join(sorted(fields))}."
        )
    repeated = sorted(
        name for name in request.GET
        if len(request.GET.getlist(name)) > 1 and get_origin(fields[name].annotation) is not list
    )
    if repeated:
        raise HttpError(400, f"Give each of these parameters once: {', '.join(repeated)}.")


def aware(moment: datetime.datetime) -> datetime.datetime:
    return moment if timezone.is_aware(moment) else timezone.make_aware(moment, datetime.timezone.utc)


def _key_value(obj, key: str):
    if isinstance(obj, dict):  # a row of .values()
        obj = obj[key]
    else:
        for part in key.split("__"):
            obj = getattr(obj, part)
    return obj.isoformat() if isinstance(obj, datetime.datetime) else obj


def _decode_cursor(cursor: str, keys: tuple[str, ...]) -> list:
    try:
        values = signing.loads(cursor, salt=CURSOR_SALT + ":" + ",".join(keys))
    except signing.BadSignature:
        raise HttpError(400, "Malformed cursor: pass back the next_cursor of a previous page unchanged.")
    if not isinstance(values, list) or len(values) != len(keys):
        raise HttpError(400, "Malformed cursor: pass back the next_cursor of a previous page unchanged.")
    return values


def _after(keys: tuple[str, ...], values: list):
    """Keyset condition "(k1, k2) > (v1, v2)", written out for databases without row comparison.

    The redundant "k1 >= v1" in front gives the database a range to start the
    (k1, k2) index scan at; without it the OR is a filter on a scan from the start,
    and page 100 would read the 99 pages before it.
    """
    condition = Q()
    for index, key in enumerate(keys):
        exact = {k: v for k, v in zip(keys[:index], values[:index])}
        condition |= Q(**exact, **{f"{key}__gt": values[index]})
    return Q(**{f"{keys[0]}__gte": values[0]}) & condition


def _capped(queryset):
    """The first COUNT_CAP + 1 matching ids: what a capped count counts."""
    return queryset.order_by().values("pk")[: COUNT_CAP + 1]


def _total(found: int) -> tuple[int, bool]:
    return min(found, COUNT_CAP), found <= COUNT_CAP


def count_up_to(queryset) -> tuple[int, bool]:
    """(how many rows match, at most COUNT_CAP; whether that is exact).

    ``COUNT(*)`` over ``LIMIT COUNT_CAP + 1``: the database stops after that many
    rows, so the count costs the same in an archive of a thousand or of a million.
    """
    return _total(_capped(queryset).count())


#: The annotation carrying the capped count on every row of a page (see paginate's count_in_page).
COUNTED = "capped_count"


def _with_count_of(page, counted):
    """`page` with the capped count of `counted` on each row, as an uncorrelated subquery
    that the database evaluates once: the count without a second query."""
    sql, params = _capped(counted).query.sql_with_params()
    return page.annotate(**{COUNTED: RawSQL(f"SELECT COUNT(*) FROM ({sql}) capped", params, IntegerField())})


def paginate(request, queryset, params: ListParams, *, keys=("updated_at", "id"), updated_field="updated_at",
             fields: tuple[str, ...] = (), count_in_page: bool = False):
    """One page of `queryset` in a stable order with a keyset cursor.

    Ordered by last change, so a sync that resumes with ``updated_since`` (or
    keeps following cursors) also sees objects changed while it was paging:
    they move to the end instead of being skipped. With `fields`, the items are
    ``.values(*fields)`` rows (which must include `keys`) rather than model instances.
    With `count_in_page` the count rides along in the page's query (a query less);
    only an empty page needs a count of its own. Not for aggregated querysets.

    The page is planned for its own values, never from a prepared statement's
    generic plan: lists on this path are filtered (a tag, an author, a
    repository), and the best plan depends on how many rows the filter keeps
    (``compiled.planned_per_run``; a generic plan took 68 ms for the benchmark's
    popular tag, against ~5 ms).
    """
    reject_unknown_params(request, params)
    after = _decode_cursor(params.cursor, keys) if params.cursor else None
    ordered, counted, count_in_page = page_query(
        queryset, keys=keys, updated_field=updated_field, since=params.updated_since, after=after,
        limit=params.limit, fields=fields, count_in_page=count_in_page,
    )
    with planned_per_run(connections[ordered.db]):
        return page_of(list(ordered), counted, params.limit, keys=keys, fields=fields, count_in_page=count_in_page)


def page_query(queryset, *, keys, updated_field, since, after, limit, fields, count_in_page):
    """(the page's query, the query its count counts, whether the count rides in the page's query).

    The page is ``limit + 1`` rows: the extra one only says that there is a next page.
    """
    if since and updated_field:
        queryset = queryset.filter(**{f"{updated_field}__gte": aware(since)})
    ordered = queryset.order_by(*keys)
    if after is not None:
        ordered = ordered.filter(_after(keys, after))
    if count_in_page:
        try:
            ordered = _with_count_of(ordered, queryset)
        except EmptyResultSet:  # .none(): no rows, and count_up_to answers 0 without a query
            count_in_page = False
    if fields:
        ordered = ordered.values(*fields, *([COUNTED] if count_in_page else []))
    return ordered[: limit + 1], queryset, count_in_page


def page_of(rows: list, counted, limit: int, *, keys, fields, count_in_page) -> dict:
    """The page answered for `rows` (up to ``limit + 1`` of them): items, count and next cursor."""
    if count_in_page and rows:
        total, exact = _total(_key_value(rows[0], COUNTED))
        if fields:
            for row in rows:
                del row[COUNTED]
    else:
        total, exact = count_up_to(counted)
    next_cursor = None
    if len(rows) > limit:
        rows = rows[:limit]
        values = [_key_value(rows[-1], key) for key in keys]
        next_cursor = signing.dumps(values, salt=CURSOR_SALT + ":" + ",".join(keys))
    return {"items": rows, "count": total, "count_is_exact": exact, "next_cursor": next_cursor}


def set_list_caching(request: HttpRequest, response: HttpResponse) -> None:
    public = not can_read_drafts(request)
    response["Cache-Control"] = PUBLIC_CACHE_CONTROL if public else PRIVATE_CACHE_CONTROL
    patch_vary_headers(response, ["Authorization"])


# --- Fast JSON ------------------------------------------------------------

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

def conditional_json(request: HttpRequest, schema: type[Schema], obj, last_modified, public: bool) -> HttpResponse:
    """`obj` as `schema` JSON with ETag / Last-Modified / Cache-Control, or a bare 304.

    The ETag is a digest of the JSON itself, so it changes whenever anything
    shown changes, including related objects with no timestamp of their own.
    """
    body = json.dumps(schema.from_orm(obj).model_dump(mode="json"), cls=NinjaJSONEncoder).encode()
    etag = '"%s"' % hashlib.sha256(body).hexdigest()[:32]
    stamp = int(last_modified.timestamp())
    answer = get_conditional_response(request, etag=etag, last_modified=stamp)
    if answer is not None and answer.status_code == 412:
        raise HttpError(412, "Precondition failed: the object has changed.")
    if answer is None:
        answer = HttpResponse(body, content_type="application/json; charset=utf-8")
    answer["ETag"] = etag
    answer["Last-Modified"] = http_date(stamp)
    answer["Cache-Control"] = PUBLIC_CACHE_CONTROL if public else PRIVATE_CACHE_CONTROL
    patch_vary_headers(answer, ["Authorization"])
    return answer
