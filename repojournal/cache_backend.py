"""Django's Redis cache, minus a per-operation cost: it builds a new ``redis.Redis`` for every get or set.

Building one (≈170 response callbacks) took about a quarter of a millisecond on
the benchmark machine -- more than a cached page's Redis round trip -- so this
client builds one per connection pool and reuses it (redis-py clients are
thread-safe; the pool does the connection handling exactly as before).
"""
from django.core.cache.backends.redis import RedisCache as DjangoRedisCache, RedisCacheClient


class ReusingRedisCacheClient(RedisCacheClient):
    def get_client(self, key=None, *, write=False):
        pool = self._get_connection_pool(write)
        clients = self.__dict__.setdefault("_clients", {})
        if id(pool) not in clients:
            clients[id(pool)] = self._client(connection_pool=pool)
        return clients[id(pool)]


class RedisCache(DjangoRedisCache):
    """``BACKEND: "repojournal.cache_backend.RedisCache"``: Django's RedisCache with reused clients."""

    def __init__(self, server, params):
        super().__init__(server, params)
        self._class = ReusingRedisCacheClient
