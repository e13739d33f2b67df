"""The library internals our measured mechanisms lean on, pinned: an upgrade that moves them fails here, loudly.

Each mechanism below reaches past a library's public API because ``make bench`` showed it pays
(docs/benchmarks.md, "Mechanisms that reach into libraries"). Behaviour tests elsewhere compare
each with the plain path (tests/site/test_compiled.py, tests/api/test_compiled_lists.py,
tests/perf/test_caching.py); these tests name the exact assumptions, so an upgrade that breaks
one says which file to revisit instead of failing somewhere downstream.
"""
import inspect

import django
import ninja
import pytest
from django.core.cache.backends.redis import RedisCacheClient
from django.db import connection
from django.db.models import Model
from ninja.throttling import SimpleRateThrottle

from blog.models import Post

REVISIT = "re-check {} against the new release, then update this pin"


def test_django_is_the_release_the_mechanisms_were_measured_on():
    assert django.VERSION[:2] == (5, 2), REVISIT.format("publishing/compiled.py, api/compiled.py, reader/cache_backend.py")


def test_ninja_is_the_release_the_throttle_was_written_against():
    assert ninja.__version__.split(".")[:2] == ["1", "7"], REVISIT.format("api/throttling.py")


@pytest.mark.django_db
def test_the_compiler_gives_what_statement_compile_reads():
    """``Statement._compile``: ``as_sql()`` -> (sql, params); ``select`` rows are (column, sql, alias) with
    ``column.target.attname``; ``get_converters`` takes those columns; ``Model.from_db(db, names, values)``."""
    compiler = Post.objects.only("card_html", "published_at").query.get_compiler(using=connection.alias)
    sql, params = compiler.as_sql()
    assert isinstance(sql, str) and isinstance(params, tuple)
    assert all(len(row) == 3 for row in compiler.select)
    assert sorted(column.target.attname for column, _, _ in compiler.select) == ["card_html", "id", "published_at"]
    assert isinstance(compiler.get_converters([column for column, _, _ in compiler.select]), dict)
    assert list(inspect.signature(Model.from_db).parameters) == ["db", "field_names", "values"]


@pytest.mark.django_db
def test_select_related_rows_are_built_as_statement_compile_builds_them():
    """``Statement._compile`` with ``select_related``: ``klass_info["select_fields"]`` are the leading
    columns, and ``get_related_populators(klass_info, select, db)`` gives objects whose
    ``populate(row, instance)`` sets the parent from the rest of the row (ModelIterable's own steps)."""
    from django.db.models.query import get_related_populators

    from digests.models import Repository

    compiler = Repository.objects.select_related("topic").query.get_compiler(using=connection.alias)
    compiler.as_sql()
    own = compiler.klass_info["select_fields"]
    assert own == list(range(len(own))) and len(compiler.select) > len(own)
    populators = get_related_populators(compiler.klass_info, compiler.select, connection.alias)
    assert len(populators) == 1
    assert list(inspect.signature(populators[0].populate).parameters) == ["row", "from_obj"]


@pytest.mark.django_db
@pytest.mark.skipif(connection.vendor != "postgresql", reason="psycopg's loaders are PostgreSQL's")
def test_registering_psycopgs_timestamp_loader_gives_its_c_loader():
    """``publishing.compiled.load_timestamps_natively`` registers ``psycopg.types.datetime.TimestamptzLoader``
    on a Django cursor; psycopg swaps in its C version (psycopg-binary), which is what makes it pay."""
    from publishing.compiled import load_timestamps_natively

    with connection.cursor() as cursor:
        load_timestamps_natively(cursor)
        loader = cursor.cursor.adapters.get_loader(1184, 0)  # timestamptz, text
    assert loader.__module__ == "psycopg_binary._psycopg", loader


def test_the_redis_cache_client_keeps_its_pools_and_client_class_where_reader_cache_backend_reads_them():
    """``ReusingRedisCacheClient.get_client``: ``_get_connection_pool(write)`` and ``_client(connection_pool=)``."""
    client = RedisCacheClient(["redis://127.0.0.1:6379/15"])
    assert list(inspect.signature(client._get_connection_pool).parameters) == ["write"]
    assert client._client.__name__ == "Redis"
    assert "connection_pool" in inspect.signature(client._client).parameters


def test_ninjas_rate_throttle_keeps_the_hooks_api_throttling_overrides():
    """``SettingsRateThrottle``: ``parse_rate``, ``timer``, ``throttle_failure`` and ``wait()`` reading
    ``history``, ``now``, ``duration`` and ``num_requests``."""
    for name in ("parse_rate", "timer", "throttle_failure", "wait", "get_ident", "allow_request"):
        assert callable(getattr(SimpleRateThrottle, name)), name
    wait = inspect.getsource(SimpleRateThrottle.wait)
    for attribute in ("self.history", "self.now", "self.duration", "self.num_requests"):
        assert attribute in wait, attribute


def test_kombu_names_a_queue_s_redis_lists_as_publishing_queues_reads_them():
    """``publishing.queues.waiting`` reads the Redis lists of the default queue by kombu's own names
    (``Channel._q_for_pri`` over ``priority_steps``) and each message's task id at ``headers.id``
    (Celery's message protocol 2); tests/ingestion/test_celery.py reads a real queue with it."""
    from celery import __version__ as celery_version
    from kombu.transport.redis import Channel

    assert list(inspect.signature(Channel._q_for_pri).parameters) == ["self", "queue", "pri"]
    assert Channel.priority_steps is not None
    assert celery_version.split(".")[0] == "5", REVISIT.format("publishing/queues.py (message protocol 2)")


@pytest.mark.django_db(transaction=True)
def test_on_commit_callbacks_wait_in_run_on_commit_until_commit_or_rollback():
    """``publishing.transactions.pending_callback`` finds the transaction's callback among
    ``connection.run_on_commit`` rows of (savepoint ids, callback, robust); Django empties the list
    at the commit and drops a rolled-back savepoint's callbacks."""
    from django.db import transaction

    def kept():
        return None

    def dropped():
        return None

    with transaction.atomic():
        transaction.on_commit(kept)
        assert [row[1] for row in connection.run_on_commit] == [kept] and len(connection.run_on_commit[0]) == 3
        try:
            with transaction.atomic():
                transaction.on_commit(dropped)
                raise RuntimeError("roll back the savepoint")
        except RuntimeError:
            pass
        assert [row[1] for row in connection.run_on_commit] == [kept]
    assert connection.run_on_commit == []
