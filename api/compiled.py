"""Unfiltered API list pages from a statement compiled once per process.

Most list requests are a sync paging through everything it may see: only
``cursor``, ``limit`` and ``updated_since``. For those, building and compiling
the page's query through the ORM (the visibility filter, the keyset condition,
the capped count, ``.values()``) cost more CPU than PostgreSQL spent answering
it, and the SQL is the same on every request but for its parameters: "now",
the cursor's values and ``updated_since``. So the page's queryset is built by
the same code as always (``visible`` and ``pagination.page_query``) with
stand-in values, compiled once per shape (model, fields, read:drafts or not,
cursor or not, ``updated_since`` or not, limit, count cap and database), and
each request swaps its own values in for the stand-ins' parameters. Rows get
the same converters ``.values()`` applies, so the answer is the ORM path's,
byte for byte (tests/api/test_compiled_lists.py compares them). Filtered
lists keep the ORM path: their filters look rows up first (tags, authors,
repositories), so the shape of their SQL depends on the data.
"""
import datetime

from django.db import connection, connections, router
from django.utils import timezone

from publishing.compiled import load_timestamps_natively

from . import auth, pagination

#: The query parameters of an unfiltered list: anything else takes the ORM path.
PAGING_PARAMETERS = frozenset({"cursor", "limit", "updated_since"})

#: Stand-ins compiled into the statement where each request's own values go. Values no request can
#: carry: a cursor or ``updated_since`` in 1900 is possible, but a replacement is chosen by the
#: parameter's position in the compiled statement, never by comparing request values.
NOW = datetime.datetime(1900, 1, 1, 0, 0, 1, tzinfo=datetime.timezone.utc)
SINCE = datetime.datetime(1900, 1, 1, 0, 0, 2, tzinfo=datetime.timezone.utc)
AFTER = (datetime.datetime(1900, 1, 1, 0, 0, 3, tzinfo=datetime.timezone.utc), -7_777_777_777)

#: shape -> compiled statement; bounded (two models, two fields tuples, 2 x 2 x 2 x MAX_PAGE_SIZE shapes).
_statements: dict = {}


def is_unfiltered(request) -> bool:
    return request.GET.keys() <= PAGING_PARAMETERS


def paginate_unfiltered(request, model, params: pagination.ListParams, *, fields: tuple[str, ...]) -> dict:
    """What ``pagination.paginate(request, visible(request, model.objects.all()), params, fields=fields,
    count_in_page=True)`` answers, from the compiled statement (see the module docstring)."""
    pagination.reject_unknown_params(request, params)
    keys = ("updated_at", "id")
    after = pagination._decode_cursor(params.cursor, keys) if params.cursor else None
    drafts = auth.can_read_drafts(request)
    shape = (model._meta.label, fields, drafts, after is not None, params.updated_since is not None, params.limit,
             pagination.COUNT_CAP, connection.alias)
    if shape not in _statements:
        _statements[shape] = _compile(request, model, params, fields, keys, after is not None)
    sql, slots, names, converters = _statements[shape]
    values = {("now",): _prepared(model, "published_at", None)}
    if params.updated_since is not None:
        values[("since",)] = _prepared(model, "updated_at", pagination.aware(params.updated_since))
    if after is not None:
        for index, (key, value) in enumerate(zip(keys, after)):
            values[("after", index)] = _prepared(model, key, value)
    bound = [values[slot] if slot else param for slot, param in slots]
    with connections[router.db_for_read(model)].cursor() as cursor:  # a replica for readers (repojournal/replicas.py)
        load_timestamps_natively(cursor)
        cursor.execute(sql, bound)
        rows = _rows(names, converters, cursor.fetchall())
    counted = None
    if not rows:  # rare (an empty list or a page that emptied): count through the ORM
        queryset = auth.visible(request, model.objects.all())
        _, counted, _ = pagination.page_query(queryset, keys=keys, updated_field="updated_at",
                                             since=params.updated_since, after=after, limit=params.limit,
                                             fields=fields, count_in_page=False)
    return pagination.page_of(rows, counted, params.limit, keys=keys, fields=fields, count_in_page=True)


def _prepared(model, name: str, value):
    """`value` as the ORM binds it for the field `name` (a cursor's ISO text becomes a datetime; now by default)."""
    field = model._meta.get_field(name)
    if value is None:
        value = timezone.now()
    return field.get_db_prep_value(value, connection)


def _compile(request, model, params, fields, keys, with_cursor: bool):
    """(SQL, [(slot, parameter)], column names, converters) of the page's queryset built with stand-ins.

    A slot names which request value a parameter takes: ("now",), ("since",), ("after", i), or
    () for a constant the statement keeps.
    """
    queryset = auth.visible(request, model.objects.all(), now=NOW)
    page, _, counted_in_page = pagination.page_query(
        queryset, keys=keys, updated_field="updated_at", since=SINCE if params.updated_since else None,
        after=list(AFTER) if with_cursor else None, limit=params.limit, fields=fields, count_in_page=True,
    )
    assert counted_in_page, "an unfiltered list is never .none()"
    stand_ins = {_prepared(model, "published_at", NOW): ("now",), _prepared(model, "updated_at", SINCE): ("since",)}
    for index, (key, value) in enumerate(zip(keys, AFTER)):
        stand_ins[_prepared(model, key, value)] = ("after", index)
    compiler = page.query.get_compiler(using=connection.alias)
    sql, params_ = compiler.as_sql()
    slots = [(stand_ins.get(param, ()) if _hashable(param) else (), param) for param in params_]
    expected = {("now",)} if not auth.can_read_drafts(request) else set()
    expected |= {("since",)} if params.updated_since else set()
    expected |= {("after", index) for index in range(len(keys))} if with_cursor else set()
    assert {slot for slot, _ in slots if slot} == expected, "every stand-in must be a parameter of the statement"
    names = [*page.query.extra_select, *page.query.values_select, *page.query.annotation_select]
    converters = compiler.get_converters([column for column, _, _ in compiler.select])
    return sql, slots, names, converters


def _hashable(value) -> bool:
    try:
        hash(value)
    except TypeError:
        return False
    return True


def _rows(names: list[str], converters: dict, rows: list) -> list[dict]:
    """``.values()`` rows: the database's values through the same converters, in the same order, that
    the ORM applies (with the same connection object it passes them)."""
    steps = [(index, function, expression) for index, (functions, expression) in converters.items()
             for function in functions]
    if not steps:
        return [dict(zip(names, row)) for row in rows]
    database = connections[connection.alias]
    converted = []
    for row in rows:
        row = list(row)
        for index, function, expression in steps:
            row[index] = function(row[index], expression, database)
        converted.append(dict(zip(names, row)))
    return converted
