"""Cursor pagination for API lists: a stable order by last change, a keyset cursor, a capped count."""
import datetime
from typing import Generic, TypeVar, get_origin

from django.core import signing
from django.core.exceptions import EmptyResultSet
from django.db import connections
from django.db.models import IntegerField, Q
from django.db.models.expressions import RawSQL
from django.http import HttpRequest
from django.utils import timezone
from ninja import Field, Schema
from ninja.errors import HttpError
from pydantic import BaseModel

from publishing.compiled import planned_per_run

from .types import Moment

DEFAULT_PAGE_SIZE = 50
MAX_PAGE_SIZE = 200
#: `count` is exact up to this many objects; past it a list says so (`count_is_exact: false`)
#: instead of counting the whole archive on every page.
COUNT_CAP = 1000
CURSOR_SALT = "repojournal.api.cursor"


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
