"""Throttles per client address and per token, with rates from settings.API_THROTTLE_RATES."""
import hashlib
import logging
import os
import time

from django.conf import settings
from django.core.cache import DEFAULT_CACHE_ALIAS, caches
from django.http import HttpRequest
from ninja.throttling import SimpleRateThrottle
from redis.exceptions import NoScriptError, RedisError

from accounts.models import ApiToken

logger = logging.getLogger(__name__)


#: The sliding-window log of SimpleRateThrottle as one atomic Redis command: drop the requests
#: that left the window, count the rest, and record this one if there is room. Returns
#: {1} if allowed, else {0, requests in the window, the oldest one's time}. KEYS[1]: the log (a sorted set
#: scored by time); ARGV: now, the window's start, the limit, the window in seconds, a unique member.
SLIDING_WINDOW_SCRIPT = """
redis.call("ZREMRANGEBYSCORE", KEYS[1], "-inf", ARGV[2])
local count = redis.call("ZCARD", KEYS[1])
if count < tonumber(ARGV[3]) then
    redis.call("ZADD", KEYS[1], ARGV[1], ARGV[5])
    redis.call("EXPIRE", KEYS[1], ARGV[4])
    return {1}
end
return {0, count, redis.call("ZRANGE", KEYS[1], 0, 0, "WITHSCORES")[2]}
"""


class SettingsRateThrottle(SimpleRateThrottle):
    """A throttle whose rate is read from settings.API_THROTTLE_RATES on every request,
    so deployments (and tests) change rates without re-importing the routers.

    On a Redis cache the check is one round trip (``SLIDING_WINDOW_SCRIPT``) instead of
    ninja's read and rewrite of the whole pickled log -- and it is atomic, so concurrent
    workers no longer overwrite each other's requests. Other caches (including Django's own
    RedisCache, which has no public way to lend its client) use ninja's code.
    """

    def __init__(self, scope: str):
        self.scope = scope

    def allow_request(self, request: HttpRequest) -> bool:
        """Whether the request is within the rate; also when the cache is down (``cache_down``)."""
        try:
            return self._allow(request)
        except RedisError:
            return cache_down(self.scope)

    def _allow(self, request: HttpRequest) -> bool:
        self.rate = settings.API_THROTTLE_RATES[self.scope]
        self.num_requests, self.duration = _parsed_rate(self, self.rate)
        backend = caches[DEFAULT_CACHE_ALIAS]
        if not callable(getattr(backend, "client", None)):  # only our reader.cache_backend.RedisCache lends one
            return super().allow_request(request)
        self.key = self.get_cache_key(request)
        if self.key is None:
            return True
        return self._allow_in_redis(backend)

    def _allow_in_redis(self, backend) -> bool:
        key = backend.make_key(self.key)  # our own ASCII key: no need for validate_key's warnings
        client = backend.client(key, write=True)
        self.now = self.timer()
        args = (repr(self.now), repr(self.now - self.duration), self.num_requests, self.duration, os.urandom(16).hex())
        answer = _sliding_window(client, key, args)
        if answer[0]:
            return True
        # What ninja's wait() reads: the log, newest first (only its length and oldest entry count).
        count = answer[1]
        self.history = [self.now] * (count - 1) + [float(answer[2])] if count else []
        return self.throttle_failure()


def cache_down(scope: str) -> bool:
    """A throttle whose counts are unreachable lets the request through: a Redis restart must not take
    the API down with it (issue 25), and a few seconds unthrottled cost less than refusing every client."""
    logger.warning("The cache is unreachable: the %s throttle lets requests through until it is back.", scope)
    return True


#: rate -> (requests, seconds): ninja's parse_rate, once per rate rather than once per request.
_rates: dict = {}


def _parsed_rate(throttle: SimpleRateThrottle, rate: str | None):
    if rate not in _rates:
        _rates[rate] = throttle.parse_rate(rate)
    return _rates[rate]


#: SHA1 of SLIDING_WINDOW_SCRIPT, the name Redis runs it by.
SLIDING_WINDOW_SHA = hashlib.sha1(SLIDING_WINDOW_SCRIPT.encode()).hexdigest()


def _sliding_window(client, key: str, args: tuple):
    """SLIDING_WINDOW_SCRIPT by its SHA1 (one EVALSHA), loading it into a server that lacks it (new or
    restarted) and trying again -- what redis-py's Script object does, without its per-call overhead."""
    try:
        return client.evalsha(SLIDING_WINDOW_SHA, 1, key, *args)
    except NoScriptError:
        client.script_load(SLIDING_WINDOW_SCRIPT)
        return client.evalsha(SLIDING_WINDOW_SHA, 1, key, *args)


class PerIPThrottle(SettingsRateThrottle):
    def get_cache_key(self, request: HttpRequest):
        return f"api_throttle_{self.scope}_ip_{self.get_ident(request)}"

    def get_ident(self, request: HttpRequest) -> str:
        """The client's address as the sign-in lockouts see it: the first of
        ``AXES_IPWARE_META_PRECEDENCE_ORDER`` the request has (behind the edge ``X-Real-IP``, which the
        VCL overwrites with the address it saw), else ``REMOTE_ADDR``.

        Not ninja's default, ``X-Forwarded-For`` whole: a client writes that header itself, and
        the edge only appends to it, so each invented value was a fresh bucket -- the per-address
        limits, the token-guessing one included, were one header away from having none.
        """
        for key in settings.AXES_IPWARE_META_PRECEDENCE_ORDER:
            address = request.META.get(key, "").split(",")[0].strip()
            if address:
                return address
        return request.META.get("REMOTE_ADDR", "")


class PerTokenThrottle(SettingsRateThrottle):
    def get_cache_key(self, request: HttpRequest):
        token = getattr(request, "auth", None)
        if not isinstance(token, ApiToken):
            return None
        return f"api_throttle_{self.scope}_token_{token.pk}"


class FailureThrottle(PerIPThrottle):
    """Counts failures only (e.g. unknown API tokens) per client address, in fixed windows.

    Unlike the request throttles it is asked *before* the work: once an address has used up
    its failures, ``blocked()`` refuses its next attempts (a right token included) until the
    window ends, so guessing tokens gets no answer either way.
    """

    DEFAULT_RATE = "10/m"

    def _window(self, request: HttpRequest) -> tuple[str, int, float]:
        rate = settings.API_THROTTLE_RATES.get(self.scope, self.DEFAULT_RATE)
        limit, duration = _parsed_rate(self, rate)
        now = time.time()
        return f"{self.get_cache_key(request)}_{int(now // duration)}", limit, duration - now % duration

    def blocked(self, request: HttpRequest) -> int | None:
        """Seconds until this address may try again, or None if it may now (or the count is unreachable)."""
        key, limit, left = self._window(request)
        try:
            used = caches[DEFAULT_CACHE_ALIAS].get(key, 0)
        except RedisError:
            return None if cache_down(self.scope) else 1
        return max(int(left) + 1, 1) if used >= limit else None

    def record(self, request: HttpRequest) -> None:
        key, _limit, left = self._window(request)
        cache = caches[DEFAULT_CACHE_ALIAS]
        try:
            cache.add(key, 0, int(left) + 1)
            try:
                cache.incr(key)
            except ValueError:  # expired between add and incr
                cache.set(key, 1, int(left) + 1)
        except RedisError:
            cache_down(self.scope)


def throttles(kind: str) -> list[SettingsRateThrottle]:
    """Per-IP and per-token throttles for "list" (expensive queries) or "write" operations."""
    return [PerIPThrottle(f"{kind}_ip"), PerTokenThrottle(f"{kind}_token")]
