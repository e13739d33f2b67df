"""Pagination for reader listings: a page costs the same on the first page and the hundredth.

Reader listings never count their rows (a ``COUNT`` walks every matching row, so it
grows with the archive) and never skip rows with ``OFFSET`` when the reader follows
the "Older"/"Newer" links: those carry a keyset cursor -- the sort key of the last
(or first) row shown -- so the database starts reading where the previous page
stopped, through the listing's index. A page is one query of ``per_page + 1`` rows;
the extra row only says whether there is a next page.

``?page=N`` (bookmarks, hand-typed URLs) still works by offset, and a bad ``?page=``
or ``?cursor=`` is a 404, never a 500 or a silent page 1.
"""
from dataclasses import dataclass

from django.core import signing
from django.db import connections
from django.db.models import Q
from django.http import Http404
from django.utils.functional import cached_property

from .compiled import Statement, stand_in

PER_PAGE = 20
#: Deeper ``?page=N`` offsets than this are refused: links carry cursors, so only hand-made URLs go there.
MAX_PAGE = 1000
CURSOR_SALT = "publishing.pagination"


@dataclass
class ReaderPage:
    """One page of a listing, with the cursors of its neighbours (``None`` at either end)."""

    object_list: list
    number: int
    next_cursor: str | None = None
    previous_cursor: str | None = None

    def __iter__(self):
        return iter(self.object_list)

    def __len__(self) -> int:
        return len(self.object_list)

    @property
    def has_next(self) -> bool:
        return self.next_cursor is not None

    @property
    def has_previous(self) -> bool:
        return self.previous_cursor is not None

    @property
    def has_other_pages(self) -> bool:
        return self.has_next or self.has_previous


def _sort_keys(queryset) -> list[tuple[str, bool]]:
    """``(field, descending)`` for each term of the queryset's ordering."""
    ordering = queryset.query.order_by or queryset.model._meta.ordering
    return [(term.lstrip("-"), term.startswith("-")) for term in ordering]


def _beyond(keys: list[tuple[str, bool]], values: list, *, forward: bool, nullable=frozenset(),
            nulls_largest: bool = True) -> Q:
    """Rows after (``forward``) or before the row whose sort key is `values`, in the listing's order.

    ``(a, b) after (x, y)`` is written ``a ≤ x AND (a < x OR (a = x AND b < y))`` for a
    descending order: the redundant first bound lets the database start its index scan
    at the cursor instead of filtering from the top.

    A key named in `nullable` (a reference's ``merged_at``) may hold NULL, which the
    database sorts as largest (PostgreSQL) or smallest (SQLite: `nulls_largest`).
    A NULL in the cursor is compared with ``IS NULL``; where NULL rows come after
    the cursor's value on this walk they are added with ``OR IS NULL``, without
    the redundant bound -- on PostgreSQL that is the walk towards newer rows.
    """
    (name, descending), value = keys[0], values[0]
    decreasing = descending == forward  # this walk meets larger values first
    nulls_follow = name in nullable and nulls_largest != decreasing  # NULL rows come after every value
    rest = (_beyond(keys[1:], values[1:], forward=forward, nullable=nullable, nulls_largest=nulls_largest)
            if len(keys) > 1 else None)
    if value is None:
        values_after = Q(pk__in=[]) if nulls_largest != decreasing else Q(**{f"{name}__isnull": False})
        return values_after if rest is None else values_after | (Q(**{f"{name}__isnull": True}) & rest)
    later = "lt" if decreasing else "gt"
    strictly = Q(**{f"{name}__{later}": value})
    if nulls_follow:
        strictly |= Q(**{f"{name}__isnull": True})
    if rest is None:
        return strictly
    tie = Q(**{name: value}) & rest
    if nulls_follow:
        return strictly | tie
    return Q(**{f"{name}__{later}e": value}) & (strictly | tie)


def _cursor(number: int, forward: bool, row, keys) -> str:
    values = [getattr(row, name) for name, _ in keys]
    return signing.dumps([number, forward, [value.isoformat() if hasattr(value, "isoformat") else value
                                            for value in values]], salt=CURSOR_SALT, compress=True)


def _decode(cursor: str, keys) -> tuple[int, bool, list]:
    try:
        number, forward, values = signing.loads(cursor, salt=CURSOR_SALT)
    except (signing.BadSignature, ValueError, TypeError) as error:
        raise Http404("Malformed page cursor.") from error
    if not isinstance(number, int) or number < 1 or len(values) != len(keys):
        raise Http404("Malformed page cursor.")
    return number, bool(forward), values


def _page_number(request) -> int:
    raw = request.GET.get("page") or "1"
    try:
        number = int(raw)
    except ValueError as error:
        raise Http404("That page number is not an integer.") from error
    if not 1 <= number <= MAX_PAGE:
        raise Http404(f"Page numbers run from 1 to {MAX_PAGE}.")
    return number


def _position(request, keys) -> tuple[int, bool | None, list | None]:
    """(page number, forward, sort key) the request asks for; ``None, None`` for a ``?page=`` offset."""
    if cursor := request.GET.get("cursor"):
        return _decode(cursor, keys)
    return _page_number(request), None, None


def _window(queryset, keys, number: int, forward: bool | None, values: list | None, per_page: int,
            nullable=frozenset()):
    """The page's rows and one more: after the cursor's row in `forward` order, or at the page's offset."""
    if forward is None:
        return queryset[(number - 1) * per_page : number * per_page + 1]
    nulls_largest = connections[queryset.db].features.nulls_order_largest
    window = queryset.filter(_beyond(keys, values, forward=forward, nullable=nullable, nulls_largest=nulls_largest))
    if not forward:
        window = window.reverse()
    return window[: per_page + 1]


def _page(rows: list, number: int, forward: bool | None, keys, per_page: int) -> ReaderPage:
    """The page shown from `_window`'s rows (404 when a page past the first has none)."""
    more = len(rows) > per_page
    rows = rows[:per_page]
    if forward is None:
        if not rows and number > 1:
            raise Http404("No such page.")
        has_next, has_previous = more, number > 1
    else:
        if not forward:
            rows.reverse()
        if not rows:
            raise Http404("No rows on that page any more.")
        has_next = more if forward else True
        has_previous = number > 1 and (True if forward else more)
    return ReaderPage(
        object_list=rows,
        number=number,
        next_cursor=_cursor(number + 1, True, rows[-1], keys) if has_next else None,
        previous_cursor=_cursor(number - 1, False, rows[0], keys) if has_previous else None,
    )


def paginate(request, queryset, per_page: int = PER_PAGE, *, nullable=frozenset()) -> ReaderPage:
    """The page of `queryset` the request asks for: one query, whatever the archive's size.

    `queryset` must be ordered by a unique key (its own ``order_by`` or the model's
    ``Meta.ordering``, ending with the primary key); `nullable` names the sort keys
    that may be NULL in its rows (see ``_beyond``).
    """
    keys = _sort_keys(queryset)
    number, forward, values = _position(request, keys)
    rows = list(_window(queryset, keys, number, forward, values, per_page, frozenset(nullable)))
    return _page(rows, number, forward, keys, per_page)


class Listing:
    """A reader listing whose pages run statements compiled once per process (``publishing.compiled``).

    ``paginate(request, build(**values))`` builds and compiles the same query on
    every request, which costs more CPU than the database spends on it. A
    ``Listing`` builds page 1 and the cursor pages (what links lead to) once per
    shape with stand-in values and binds each request's own; the SQL, the rows
    and the page are ``paginate``'s (tests/site/test_compiled.py compares them).
    A ``?page=N`` offset past the first is built through the ORM as before: only
    hand-made URLs go there, and each offset would be a shape of its own.

    `build(**values)` returns the listing's ordered queryset; `fields` names each
    value and the model field it is compared with, `custom_plans` asks for
    statements planned for each run's values (see ``compiled.Statement``) and
    `nullable` names the sort keys that may be NULL (``paginate``). A cursor at a
    row with a NULL sort key, rare, is built through the ORM.
    """

    def __init__(self, build, per_page: int = PER_PAGE, *, custom_plans: bool = False, nullable=(), **fields):
        self.build = build
        self.per_page = per_page
        self.custom_plans = custom_plans
        self.nullable = frozenset(nullable)
        self.fields = fields
        self._statements = {}

    def page(self, request, **values) -> ReaderPage:
        """What ``paginate(request, build(**values), per_page)`` returns."""
        keys = self.keys
        number, forward, after = _position(request, keys)
        if (forward is None and number > 1) or (after and None in after):
            # an offset, or a cursor at a row with a NULL sort key: built through the ORM
            rows = list(_window(self.build(**values), keys, number, forward, after, self.per_page, self.nullable))
        else:
            cursor = {f"after_{index}": value for index, value in enumerate(after or ())}
            rows = self._statement(forward).fetch(**values, **cursor)
        return _page(rows, number, forward, keys, self.per_page)

    @cached_property
    def keys(self) -> list[tuple[str, bool]]:
        return _sort_keys(self._prototype)

    @cached_property
    def _prototype(self):
        """The listing's queryset built with stand-ins: its model and its order."""
        return self.build(**{name: stand_in(field) for name, field in self.fields.items()})

    def _statement(self, forward: bool | None) -> Statement:
        """Page 1's statement (`forward` None), or a cursor page's in that direction."""
        if forward not in self._statements:
            keys, fields = self.keys, self.fields
            if forward is not None:
                model = self._prototype.model
                fields = {**fields, **{f"after_{index}": model._meta.get_field(name)
                                       for index, (name, _) in enumerate(keys)}}

            def build(**values):
                after = [values.pop(f"after_{index}") for index in range(len(keys))] if forward is not None else None
                return _window(self.build(**values), keys, 1, forward, after, self.per_page, self.nullable)

            self._statements[forward] = Statement(build, custom_plans=self.custom_plans, **fields)
        return self._statements[forward]
