"""Reader queries compiled once per process and run with each request's own values.

The reader's listing and lookup queries have the same SQL on every request but
for a few values: "now", a tag's or author's id, a slug, a cursor's sort key.
Building and compiling them through the ORM (filters, subqueries, ordering,
``as_sql``) cost several times what PostgreSQL spends answering them. A
``Statement`` builds its queryset once, through the same queryset methods as
always, with a stand-in for each value; compiles it; remembers which of the
statement's parameters each stand-in became; and on each run binds the real
values there and makes model instances from the rows as ``ModelIterable`` does
(same converters, same deferred fields). The SQL is the ORM's own, byte for
byte, and so are the instances (tests/site/test_compiled.py compares them).

Only what never changes with the data is kept: the SQL and its shape. Every
run reads the database. The same idea serves the API's lists
(``api.compiled``).
"""
import contextlib
import datetime
import itertools

from django.db import DEFAULT_DB_ALIAS, connections, models, router
from django.db.models.query import NamedValuesListIterable, ValuesListIterable, get_related_populators
from django.db.models.utils import create_namedtuple_class
from django.http import Http404
from django.utils import timezone

_serial = itertools.count(1)


def stand_in(field: models.Field):
    """A value of `field`'s type no request carries, distinct from every other stand-in of this process.

    A run replaces parameters by their position in the compiled statement, found
    by comparing with the stand-ins once, at compile time; so a stand-in only has
    to differ from the statement's constants and from the other stand-ins.
    """
    number = next(_serial)
    if isinstance(field, models.DateTimeField):
        epoch = datetime.datetime(1900, 1, 1, tzinfo=datetime.timezone.utc)
        return epoch + datetime.timedelta(seconds=number, microseconds=777)
    if isinstance(field, models.DateField):
        return datetime.date(1900, 1, 1) + datetime.timedelta(days=number)
    if isinstance(field.target_field if field.is_relation else field, models.IntegerField):
        return -7_777_777_000 - number
    if isinstance(field, models.CharField):
        return f"\N{REPLACEMENT CHARACTER}stand-in {number}\N{REPLACEMENT CHARACTER}"
    raise TypeError(f"No stand-in for a {type(field).__name__}.")


class Statement:
    """`build(**values)`'s queryset, compiled once per database and time zone, run with each call's values.

    `fields` names each value `build` takes and the model field it is compared
    with (which prepares it for the database, as the ORM's lookup would). The
    queryset must yield model instances -- ``select_related`` and annotations
    allowed (the related instances are made, and the annotations set, as
    ``ModelIterable`` does, so one statement reads a row, its parent and what
    subqueries add); no ``prefetch_related`` or ``values()`` -- or be a
    ``values_list()`` (annotations and aggregates allowed), whose rows come
    back as tuples through the same converters (named tuples for
    ``named=True``, as the ORM's). The current time zone is part of the
    compiled SQL (``TruncWeek`` and the like), so each zone gets its own.

    ``custom_plans=True`` keeps psycopg from preparing the statement (see
    ``planned_per_run``), for a query whose best plan depends on its values.
    """

    def __init__(self, build, *, custom_plans: bool = False, **fields: models.Field):
        self.build = build
        self.fields = fields
        self.custom_plans = custom_plans
        self._compiled = {}

    def fetch(self, using: str | None = None, **values) -> list:
        """The queryset's rows for these values -- model instances, or tuples for a ``values_list()`` -- in one query.

        Without `using`, the database the routers choose for the model's reads (a read replica for
        a reader's request, repojournal/replicas.py), as the ORM's queryset would read.
        """
        using = using or self._read_alias()
        sql, slots, model, init_list, converters, related, row_class, annotations = self._compiled_for(using)
        connection = connections[using]
        prepared = {name: self.fields[name].get_db_prep_value(value, connection) for name, value in values.items()}
        with connection.cursor() as cursor, planned_per_run(connection, self.custom_plans):
            load_timestamps_natively(cursor)
            cursor.execute(sql, [prepared[slot] if slot else param for slot, param in slots])
            rows = cursor.fetchall()
        if row_class is not None:
            new = tuple.__new__
            return [new(row_class, _converted(row, converters, connection)) for row in rows]
        if init_list is None:
            return [_converted(row, converters, connection) for row in rows]
        if not related and not annotations:
            return [model.from_db(using, init_list, _converted(row, converters, connection)) for row in rows]
        instances = []
        for row in rows:
            row = _converted(row, converters, connection)
            instance = model.from_db(using, init_list, row[:len(init_list)])
            for name, position in annotations:
                setattr(instance, name, row[position])
            for populator in related:
                populator.populate(row, instance)
            instances.append(instance)
        return instances

    def get_or_404(self, using: str | None = None, **values):
        """The one row for these values, or Http404 (``get_object_or_404`` on the compiled queryset)."""
        using = using or self._read_alias()
        rows = self.fetch(using, **values)
        if len(rows) == 1:
            return rows[0]
        model = self._compiled_for(using)[2]
        if not rows:
            raise Http404(f"No {model._meta.object_name} matches the given query.")
        raise model.MultipleObjectsReturned(f"get() returned more than one {model._meta.object_name} -- it returned {len(rows)}!")

    def _read_alias(self) -> str:
        return router.db_for_read(self._compiled_for(DEFAULT_DB_ALIAS)[2])

    def _compiled_for(self, using: str) -> tuple:
        """`_compile`'s answer for this database and the current time zone, compiled once."""
        key = (using, timezone.get_current_timezone_name())
        if key not in self._compiled:
            self._compiled[key] = self._compile(using)
        return self._compiled[key]

    def _compile(self, using: str):
        """(SQL, [(value name or None, parameter)], model, attnames, converters, related populators,
        named tuple class, [(annotation, column)]) of the stand-in queryset (attnames None for a
        ``values_list()``, the class None unless it is ``named=True``)."""
        connection = connections[using]
        stand_ins = {name: stand_in(field) for name, field in self.fields.items()}
        queryset = self.build(**stand_ins)
        query = queryset.query
        rows = queryset._iterable_class in (ValuesListIterable, NamedValuesListIterable)
        assert rows or queryset._iterable_class is models.query.ModelIterable, "model instances or values_list()"
        assert not queryset._prefetch_related_lookups and not query.extra_select
        assert rows or not queryset._known_related_objects, "no instances from a related manager"
        compiler = query.get_compiler(using=using)
        sql, params = compiler.as_sql()
        by_value = {
            self.fields[name].get_db_prep_value(value, connection): name for name, value in stand_ins.items()
        }
        slots = [(by_value.get(param) if isinstance(param, (str, int, datetime.date)) else None, param)
                 for param in params]
        assert {slot for slot, _ in slots if slot} == set(self.fields), "every value must be a parameter"
        converters = compiler.get_converters([column for column, _, _ in compiler.select])
        if rows:
            named = queryset._iterable_class is NamedValuesListIterable
            names = queryset._fields or [*query.values_select, *query.annotation_select]
            row_class = create_namedtuple_class(*names) if named else None  # the class the ORM's rows have
            return sql, slots, queryset.model, None, converters, [], row_class, []
        # The queryset's own columns come first (ModelIterable's select_fields), then each related model's.
        own = compiler.klass_info["select_fields"]
        assert own == list(range(len(own))), "the model's columns lead the row"
        init_list = [column.target.attname for column, _, _ in compiler.select[:len(own)]]
        related = get_related_populators(compiler.klass_info, compiler.select, using)
        annotations = list(compiler.annotation_col_map.items())  # set on each instance, as ModelIterable does
        return sql, slots, queryset.model, init_list, converters, related, None, annotations


def load_timestamps_natively(cursor) -> None:
    """On PostgreSQL in UTC, read this cursor's timestamps with psycopg's own loader (C code with
    psycopg-binary) instead of Django's Python subclass of it, which only re-attaches the tzinfo
    the session's time zone already gave. An API page has two timestamps a row, a repository page
    sixty in all; parsing them in Python was a tenth of the request's CPU. Same values, same
    ``datetime.timezone.utc`` (tests/api/test_list_speedups.py); any other time zone keeps
    Django's loader. Django checks the connection's loader when it makes a cursor, so the
    cursor's own is replaced, after that check."""
    connection = cursor.db
    if connection.vendor != "postgresql" or connection.timezone is not datetime.timezone.utc:
        return
    from psycopg.types.datetime import TimestamptzLoader  # psycopg picks its C version when it has one

    raw = cursor.cursor
    if raw.connection.info.parameter_status("TimeZone") == "UTC":
        raw.adapters.register_loader("timestamptz", TimestamptzLoader)


@contextlib.contextmanager
def planned_per_run(connection, custom_plans: bool = True):
    """Inside, psycopg neither prepares statements nor counts them towards preparing.

    A statement psycopg has prepared (``DATABASE_PREPARE_THRESHOLD``) may get
    PostgreSQL's generic plan, made without the values. For a listing of one tag
    or one author the right plan depends on how many posts that tag or author
    has: walk the newest posts and keep the tagged ones (a tag on half the
    archive), or read the tag's few posts and sort them. The generic plan picks
    one for every tag -- on the benchmark's tenth-scale archive it read all
    2,259 taggings of the popular tag to show page 100 (5.8 ms against 0.7 ms).
    Unprepared, every run is planned for its own values (~0.3 ms).
    """
    if not custom_plans or connection.vendor != "postgresql":
        yield
        return
    connection.ensure_connection()  # the first query of a request may be the one inside
    raw = connection.connection
    threshold = raw.prepare_threshold
    raw.prepare_threshold = None
    try:
        yield
    finally:
        raw.prepare_threshold = threshold


def _converted(row, converters: dict, connection) -> tuple:
    """The row through the converters the ORM applies to these columns (none for most on PostgreSQL)."""
    if not converters:
        return row
    row = list(row)
    for index, (functions, expression) in converters.items():
        value = row[index]
        for function in functions:
            value = function(value, expression, connection)
        row[index] = value
    return tuple(row)
