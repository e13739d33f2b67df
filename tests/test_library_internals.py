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
