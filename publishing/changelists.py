"""Admin lists at the archive's size: estimated counts, indexed search, filters that read no table (issue 26).

Django's changelist counts every row twice (the page count and "N total"), searches
with ``icontains`` over every search field (a scan of every row's body), and its
``RelatedOnlyFieldListFilter`` reads every related id of every row to list its choices.
Editors work in lists of 50,000 posts and 300,000 references, so the large lists here:

- count with ``EstimatedCountPaginator``: on PostgreSQL an estimate when the true count
  would be large (the statistics' live rows for a whole table, EXPLAIN's row estimate for a
  filtered list), the exact count on SQLite and below ``EXACT_BELOW``;
- search with ``indexed_search``: the stored full-text vectors the site search uses
  (``publishing.search``: GIN on PostgreSQL, FTS5 on SQLite) or'ed with indexed equality
  and prefix look-ups (slugs, keys, SHAs, GUIDs), never a substring scan;
- filter by a related object with ``AutocompleteFilter``: the admin's own autocomplete
  (search as you type) instead of a list of every choice.
"""

from django import forms
from django.contrib import admin
from django.contrib.admin.options import IncorrectLookupParameters
from django.contrib.admin.widgets import AutocompleteSelect
from django.core.paginator import Paginator
from django.db import connections, models
from django.db.models.expressions import RawSQL
from django.utils.functional import cached_property

from .search import TSQUERY_SQL, clean_query, fts5_query, query_words
from .search_migrations import COLUMN, CONFIG, fts_table

#: Below this many rows (by the estimate) the list counts exactly, and its pages end where they should.
#: An exact count reads every matching row -- a search re-checks each one's text vector -- so its cost
#: is bounded by this: at 10,000 it was the digest search's slowest statement on the full archive
#: (2,277 matches, 4.7 ms, against 0.5 ms for a tenth's), and the estimate that replaces it above
#: this is one EXPLAIN whatever the size; 1,000 rows are ten pages of the admin's 100.
EXACT_BELOW = 1_000


#: The one statement that counts a list on PostgreSQL (installed by migration newsroom 0002, a frozen copy
#: replacing digests 0020's; tests/test_admin_at_scale.py compares the two): for a whole table
#: (`whole_table` named) the rows it holds now (see ``estimated_count``), else the top row of `query`'s
#: ``EXPLAIN`` -- and, below `exact_below`, its exact count instead. One round trip whichever it answers,
#: so a list runs as many queries at a tenth of the archive as at its full size.
COUNT_FUNCTION = "admin_list_count"
COUNT_FUNCTION_BODY = """
DECLARE
    plan json;
BEGIN
    IF whole_table IS NOT NULL THEN
        SELECT CASE
                   -- the statistics system's live rows, once a VACUUM or ANALYZE since its last reset set them
                   WHEN NOT pg_is_in_recovery() AND COALESCE(
                            pg_stat_get_last_vacuum_time(c.oid), pg_stat_get_last_autovacuum_time(c.oid),
                            pg_stat_get_last_analyze_time(c.oid), pg_stat_get_last_autoanalyze_time(c.oid)
                        ) IS NOT NULL
                       THEN pg_stat_get_live_tuples(c.oid)
                   -- else as the planner estimates: the rows per page at the last ANALYZE times today's pages
                   WHEN c.reltuples >= 0 AND c.relpages > 0
                       THEN round(c.reltuples / c.relpages
                                  * (pg_relation_size(c.oid) / current_setting('block_size')::bigint))::bigint
               END
          INTO total FROM pg_class c WHERE c.oid = whole_table::regclass;
    END IF;
    IF total IS NULL THEN  -- a filtered list, or a table never analysed
        EXECUTE 'EXPLAIN (FORMAT JSON) ' || query INTO plan;
        total := (plan -> 0 -> 'Plan' ->> 'Plan Rows')::bigint;
    END IF;
    estimated := total >= exact_below;
    IF NOT estimated THEN
        EXECUTE 'SELECT count(*) FROM (' || query || ') AS counted' INTO total;
    END IF;
END
"""


def estimated_count(queryset, exact_below: int) -> tuple[int, bool] | None:
    """`queryset`'s row count and whether it is an estimate (PostgreSQL only, else None).

    The estimate is used at `exact_below` rows and above; below it, the exact count, in the same
    statement (``COUNT_FUNCTION``). For a filtered list it is the top row estimate of ``EXPLAIN``.

    For a whole table it must follow a mass delete (a retention prune, a bulk clean-up) at once,
    not when autovacuum next analyses the table. ``pg_class.reltuples`` (what this read before)
    changes only at VACUUM or ANALYZE. The planner's own estimate (``estimate_rel_size``:
    reltuples / relpages times the relation's pages now) follows growth -- new rows extend the
    file -- but not a DELETE: deleted rows stay on their pages, dead, until VACUUM, so the pages
    and the estimate stay the same. What does follow it is ``pg_stat_get_live_tuples``
    (``pg_stat_user_tables.n_live_tup``): set by each VACUUM and ANALYZE, then moved by every
    committed insert and delete, which the writing backend reports when it goes idle (at most
    once a second; an idle one within ten). That is the count, a few seconds late at worst.

    It is only a count once a VACUUM or ANALYZE has set it since the statistics were last reset
    (``pg_stat_reset``, a crash: then it counts only the writes since), and a standby keeps no
    count of the writes it replays. Without that -- no vacuum or analyse time recorded, or in
    recovery -- the planner's estimate stands in, and a table never analysed falls to ``EXPLAIN``.
    A transaction's own uncommitted writes are not counted (nobody else sees them either).
    """
    connection = connections[queryset.db]
    if connection.vendor != "postgresql":
        return None
    queryset = queryset.order_by()
    whole_table = None
    if not queryset.query.where and not queryset.query.combinator:
        whole_table = connection.ops.quote_name(queryset.model._meta.db_table)
    sql, params = queryset.query.sql_with_params()
    query = connection.ops.compose_sql(sql, params)  # psycopg binds the values as literals
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT total, estimated FROM {COUNT_FUNCTION}(%s, %s, %s)", [query, whole_table, exact_below])
        total, estimated = cursor.fetchone()
    return int(total), estimated


class EstimatedCountPaginator(Paginator):
    """A paginator whose count is the planner's estimate when the true count would be large.

    Counting 300,000 references costs a scan of them on every page; an editor paging
    through them needs "about how many", not the number. Where the estimate is high the
    last pages may come out empty or a few rows may lie past the last page: the list
    says so ("about"), and search or filters narrow it to an exact count.
    """

    estimated = False

    @cached_property
    def count(self) -> int:
        counted = estimated_count(self.object_list, EXACT_BELOW) if hasattr(self.object_list, "query") else None
        if counted is None:
            return super().count
        total, self.estimated = counted
        return total


class LargeListMixin:
    """For a ModelAdmin of a table that grows with the archive: estimated counts, no second full count."""

    paginator = EstimatedCountPaginator
    show_full_result_count = False  # Django would count the whole table again for "N total"


def full_text_condition(queryset, term: str, *, prefix: bool = False):
    """A condition (for ``Q``) matching rows whose stored full-text index holds `term`, as the site search does.

    A condition rather than a subquery, so PostgreSQL may either walk the list's order and
    check each row's vector (a common word: stops after a page) or read the GIN index (a
    rare one). With `prefix` (an autocomplete, typed a letter at a time) every word of
    `term` matches the words it begins, and operators are not read.
    """
    connection = connections[queryset.db]
    quote, meta = connection.ops.quote_name, queryset.model._meta
    words = query_words(clean_query(term))
    if connection.vendor == "postgresql":
        if not prefix:
            tsquery, param = TSQUERY_SQL.replace("%(query)s", "%s"), clean_query(term)
        elif words:
            tsquery, param = f"to_tsquery('{CONFIG}'::regconfig, %s)", " & ".join(f"{word}:*" for word in words)
        else:
            return None
        return RawSQL(f"{quote(meta.db_table)}.{COLUMN} @@ {tsquery}", (param,), models.BooleanField())
    if not words:
        return None
    match = " ".join(f"{fts5_query([word])} *" for word in words) if prefix else fts5_query(words)
    fts = quote(fts_table(meta.db_table))
    return RawSQL(f"{quote(meta.db_table)}.{quote(meta.pk.column)} IN (SELECT rowid FROM {fts} WHERE {fts} MATCH %s)",
                  (match,), models.BooleanField())


def is_autocomplete(request) -> bool:
    """Whether `request` is the admin's autocomplete asking for choices (prefix matches, as the editor types)."""
    return getattr(getattr(request, "resolver_match", None), "url_name", "") == "autocomplete"


def indexed_search(queryset, term: str, *, exact: models.Q | None = None, prefix: bool = False):
    """Rows of `queryset` matching `term` through indexes only: its full-text index, or the `exact` condition."""
    term = term.strip()
    if not term:
        return queryset
    conditions = [exact] if exact is not None else []
    if (condition := full_text_condition(queryset, term, prefix=prefix)) is not None:
        conditions.append(models.Q(condition))
    if not conditions:
        return queryset.none()
    combined = conditions[0]
    for condition in conditions[1:]:
        combined |= condition
    return queryset.filter(combined)


class AutocompleteFilter(admin.SimpleListFilter):
    """A filter by one related object, chosen with the admin's autocomplete rather than from a list of all.

    ``source`` names a foreign key or many-to-many field (``"app_label.model.field"``) whose
    target's admin has ``search_fields``: the autocomplete asks that admin for matches as
    the editor types. ``lookup`` is what the list filters on with the chosen id. Rendering
    reads only the chosen object (one query, when one is chosen); the choices never.
    """

    template = "admin/autocomplete_filter.html"
    source = ""
    lookup = ""

    def lookups(self, request, model_admin):
        return ()

    def has_output(self) -> bool:
        return True

    def queryset(self, request, queryset):
        value = self.value()
        if value is None:
            return queryset
        if not value.isdigit():
            raise IncorrectLookupParameters(f"{self.parameter_name} must be an id")
        return queryset.filter(**{self.lookup: int(value)})

    @cached_property
    def source_field(self):
        from django.apps import apps

        app_label, model_name, field_name = self.source.split(".")
        return apps.get_model(app_label, model_name)._meta.get_field(field_name)

    def choices(self, changelist):
        self.hidden = [(key, value) for key, values in changelist.params.items()
                       if key not in (self.parameter_name, "p") for value in (values if isinstance(values, list)
                                                                              else [values])]
        yield {"selected": self.value() is None, "display": "All",
               "query_string": changelist.get_query_string(remove=[self.parameter_name])}

    def widget(self) -> str:
        field = self.source_field
        choice = forms.ModelChoiceField(field.remote_field.model._default_manager.all(), required=False,
                                        widget=AutocompleteSelect(field, admin.site))
        return choice.widget.render(self.parameter_name, self.value(), attrs={"id": f"filter_{self.parameter_name}"})


class AutocompleteFiltersMixin:
    """A ModelAdmin mixin for ``AutocompleteFilter``: their parameters allowed, select2 and the submit script loaded."""

    def lookup_allowed(self, lookup, value, request=None):
        names = {spec.parameter_name for spec in self.list_filter
                 if isinstance(spec, type) and issubclass(spec, AutocompleteFilter)}
        return lookup in names or super().lookup_allowed(lookup, value, request)

    @property
    def media(self):
        autocomplete = AutocompleteSelect(None, admin.site).media
        return super().media + autocomplete + forms.Media(js=["admin/js/autocomplete_filter.js"])
