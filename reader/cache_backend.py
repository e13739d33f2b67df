"""Django's Redis cache, minus a per-operation cost: it builds a new ``redis.Redis`` for every get or set.

Building one (≈170 response callbacks) took about a quarter of a millisecond on
the benchmark machine -- more than a cached page's Redis round trip -- so this
client builds one per connection pool and reuses it (redis-py clients are
thread-safe; the pool does the connection handling exactly as before).

It is the site's cache backend whenever REDIS_URL is set (settings.base), so
the benchmark measures what production runs. ``RedisCache.client()`` also lends
the reused client to code that needs a Redis command the cache API lacks (the
API throttle's sliding-window script).
"""
import redis
from django.core.cache.backends.redis import RedisCache as DjangoRedisCache, RedisCacheClient


class ReusingRedisCacheClient(RedisCacheClient):
    def get_client(self, key=None, *, write=False):
        pool = self._get_connection_pool(write)
        clients = self.__dict__.setdefault("_clients", {})
        if id(pool) not in clients:
            clients[id(pool)] = self._client(connection_pool=pool)
        return clients[id(pool)]


class RedisCache(DjangoRedisCache):
    """``BACKEND: "reader.cache_backend.RedisCache"``: Django's RedisCache with reused clients."""

    def __init__(self, server, params):
        super().__init__(server, params)
        self._class = ReusingRedisCacheClient

    def client(self, key: str | None = None, *, write: bool = False) -> redis.Redis:
        """The redis-py client that serves `key` (a key already made with ``make_and_validate_key``)."""
        return self._cache.get_client(key, write=write)
