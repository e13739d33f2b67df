"""Sign-up rate limits, per address and per client, counted in the shared cache (Redis in production).

Fixed windows (a counter per window, ``add`` then ``incr``: atomic on Redis): a sign-up is rare, so
the precision of the API's sliding log buys nothing here. The client is the address the API
throttles and sign-in lockouts see (``api.throttling.PerIPThrottle.get_ident``: behind the edge,
X-Real-IP). An address is counted by its hash, so no address sits in the cache in clear.
"""
import hashlib
import time

from django.core.cache import cache
from redis.exceptions import RedisError

from api.throttling import PerIPThrottle, cache_down

_ident = PerIPThrottle("newsletters_client")


def client_ident(request) -> str:
    return _ident.get_ident(request)


def parse_rate(rate: str) -> tuple[int, int]:
    """"3/h" -> (3, 3600): ninja's rate syntax (N/s, /m, /h, /d), as the API's settings use."""
    return _ident.parse_rate(rate)


def allow(scope: str, ident: str, rate: str) -> bool:
    """Count this attempt against `ident`'s window; False once the window holds `rate`'s number.

    A cache that cannot be reached lets the attempt through (``api.throttling.cache_down``): the
    double opt-in still protects the reader, and refusing every sign-up would cost more.
    """
    limit, seconds = parse_rate(rate)
    window = int(time.time() // seconds)
    digest = hashlib.sha256(ident.encode()).hexdigest()[:32]
    key = f"newsletters:rate:{scope}:{digest}:{window}"
    try:
        cache.add(key, 0, seconds + 1)
        try:
            used = cache.incr(key)
        except ValueError:  # expired between add and incr
            cache.set(key, 1, seconds + 1)
            used = 1
    except RedisError:
        return cache_down(f"newsletters {scope}")
    return used <= limit
