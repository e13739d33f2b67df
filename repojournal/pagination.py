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
from django.db.models import Q
from django.http import Http404

PER_PAGE = 20
#: Deeper ``?page=N`` offsets than this are refused: links carry cursors, so only hand-made URLs go there.
MAX_PAGE = 1000
CURSOR_SALT = "repojournal.pagination"


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


def _beyond(keys: list[tuple[str, bool]], values: list, *, forward: bool) -> Q:
    """Rows after (``forward``) or before the row whose sort key is `values`, in the listing's order.

    ``(a, b) after (x, y)`` is written ``a ≤ x AND (a < x OR (a = x AND b < y))`` for a
    descending order: the redundant first bound lets the database start its index scan
    at the cursor instead of filtering from the top.
    """
    (name, descending), value = keys[0], values[0]
    later = "lt" if descending == forward else "gt"
    strictly = Q(**{f"{name}__{later}": value})
    if len(keys) == 1:
        return strictly
    tie = Q(**{name: value}) & _beyond(keys[1:], values[1:], forward=forward)
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


def paginate(request, queryset, per_page: int = PER_PAGE) -> ReaderPage:
    """The page of `queryset` the request asks for: one query, whatever the archive's size.

    `queryset` must be ordered by a unique, non-null key (its own ``order_by`` or the
    model's ``Meta.ordering``, ending with the primary key).
    """
    keys = _sort_keys(queryset)
    if cursor := request.GET.get("cursor"):
        number, forward, values = _decode(cursor, keys)
        window = queryset.filter(_beyond(keys, values, forward=forward))
        if not forward:
            window = window.reverse()
        rows = list(window[: per_page + 1])
        more = len(rows) > per_page
        rows = rows[:per_page]
        if not forward:
            rows.reverse()
        if not rows:
            raise Http404("No rows on that page any more.")
        has_next = more if forward else True
        has_previous = number > 1 and (True if forward else more)
    else:
        number = _page_number(request)
        rows = list(queryset[(number - 1) * per_page : number * per_page + 1])
        has_next = len(rows) > per_page
        rows = rows[:per_page]
        if not rows and number > 1:
            raise Http404("No such page.")
        has_previous = number > 1
    return ReaderPage(
        object_list=rows,
        number=number,
        next_cursor=_cursor(number + 1, True, rows[-1], keys) if has_next else None,
        previous_cursor=_cursor(number - 1, False, rows[0], keys) if has_previous else None,
    )
