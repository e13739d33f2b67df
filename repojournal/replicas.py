"""Read replicas: which reads may be a little behind, which replica serves them, and when none may.

With ``DATABASE_REPLICA_URLS`` set (repojournal/settings/base.py makes an alias ``replica_N``
per URL and installs the router and the middleware below), a request's reads go to a replica
only when all of these hold:

- the request is a ``GET``/``HEAD`` a reader or an API client sends: no session cookie (editors
  have one: the admin, previews and the edit bar always read the primary), not under
  ``/admin/`` or ``/health/``, and not from a client that wrote within the last
  ``DATABASE_REPLICA_PIN_SECONDS`` (read-your-writes: a cookie for browsers, a key in the
  shared cache for API tokens, since an API client may keep no cookies), nor within that
  long after any public change (``reader.caching.CONTENT_CHANGED_KEY``: the edge refetches a
  purged page at once and keeps it, so it must be rendered from the change);
- the read is outside a transaction (``transaction.atomic`` reads what it is about to write);
- some replica replayed everything the primary had written, or is at most
  ``DATABASE_REPLICA_MAX_LAG`` seconds behind, at its last check (each process checks each
  replica at most once a second: ``ReplicaHealth``). A replica that is down or behind is left
  out until it catches up; with none left, the primary serves.

Everything else -- writes, workers, beat, management commands -- never sees this module's
context and reads the primary. A replica that fails in the middle of a request (stopped,
restarted, its connection cut) costs the reader nothing: the middleware answers the same
``GET`` again from the primary and leaves that replica out until a check finds it back.
docs/deployment.md "Read replicas" has the picture and the settings.
"""
import hashlib
import logging
import random
import time
from collections import deque
from contextvars import ContextVar
from dataclasses import dataclass

from django.conf import settings
from django.core.cache import cache
from django.db import DatabaseError, InterfaceError, OperationalError, connections
from django.http import HttpResponse

from reader.caching import CONTENT_CHANGED_KEY

logger = logging.getLogger(__name__)

PRIMARY = "default"
PIN_COOKIE = "replica_pin"
SAFE_METHODS = frozenset({"GET", "HEAD"})
PRIMARY_ONLY_PREFIXES = ("/admin/", "/health/")
CHECK_EVERY = 1.0  # seconds between two checks of one replica by one process


@dataclass
class Route:
    """One request's routing: may its reads lag, and which replicas did they use."""

    may_lag: bool = True
    alias: str | None = None  # the database its lagging reads go to, chosen at the first
    failed: bool = False

    @property
    def replica(self) -> str | None:
        """The replica its reads went to, if any."""
        return self.alias if self.alias not in (None, PRIMARY) else None


_route: ContextVar[Route | None] = ContextVar("replica_route", default=None)


# --- replica health --------------------------------------------------------------------------

def lsn(text: str) -> int:
    """A WAL position ("16/B374D848") as a number, so positions compare."""
    high, low = text.split("/")
    return (int(high, 16) << 32) + int(low, 16)


class PrimaryPositions:
    """Where the primary's WAL stood at this process's recent checks: (position, monotonic time)."""

    def __init__(self, keep: int = 120):
        self.seen: deque[tuple[int, float]] = deque(maxlen=keep)

    def record(self, position: int, at: float) -> None:
        self.seen.append((position, at))

    def reached(self, position: int) -> float | None:
        """When the primary was last seen at or before `position`: a replica there holds all it had then."""
        times = [at for seen, at in self.seen if seen <= position]
        return max(times) if times else None


def measure_lag(alias: str, positions: PrimaryPositions | None = None) -> float:
    """Seconds ``alias`` may be behind the primary: 0 when it replayed everything the primary had written.

    Otherwise an upper bound, so a replica is never thought fresher than it is: the smaller of
    the age of the newest transaction it replayed (long after a quiet spell) and the time since
    the primary was last seen at a position the replica has replayed (``positions``, this
    process's earlier checks). Raises DatabaseError when either side cannot answer, or when
    ``alias`` is not in recovery (a promoted or misconfigured "replica" is not a copy).
    """
    now = time.monotonic()  # the primary stood at primary_lsn at this moment or later
    with connections[PRIMARY].cursor() as cursor:
        cursor.execute("SELECT pg_current_wal_lsn()::text")
        primary_lsn = cursor.fetchone()[0]
    with connections[alias].cursor() as cursor:
        cursor.execute(
            "SELECT pg_is_in_recovery(), pg_last_wal_replay_lsn()::text,"
            " EXTRACT(EPOCH FROM clock_timestamp() - pg_last_xact_replay_timestamp())",
        )
        in_recovery, replayed, age = cursor.fetchone()
    if not in_recovery:
        raise DatabaseError(f"{alias} is not in recovery: it is not a streaming replica")
    if positions is not None:
        positions.record(lsn(primary_lsn), now)
    if replayed is not None and lsn(replayed) >= lsn(primary_lsn):
        return 0.0
    bound = float(age) if age is not None else float("inf")
    reached = positions.reached(lsn(replayed)) if positions is not None and replayed is not None else None
    return min(bound, now - reached) if reached is not None else bound


class ReplicaHealth:
    """This process's view of each replica: its lag at the last check (None: unreachable)."""

    def __init__(self):
        self.lag: dict[str, float | None] = {}
        self.checked_at: dict[str, float] = {}
        self.positions = PrimaryPositions()

    def usable(self, alias: str) -> bool:
        now = time.monotonic()
        if now - self.checked_at.get(alias, float("-inf")) >= CHECK_EVERY:
            self.check(alias, now)
        lag = self.lag.get(alias)
        return lag is not None and lag <= settings.DATABASE_REPLICA_MAX_LAG

    def check(self, alias: str, now: float | None = None) -> float | None:
        self.checked_at[alias] = time.monotonic() if now is None else now
        try:
            lag = measure_lag(alias, self.positions)
        except DatabaseError as error:
            if self.lag.get(alias, 0.0) is not None:
                logger.warning("Replica %s is left out: %s", alias, error)
            close_quietly(alias)
            lag = None
        else:
            if lag > settings.DATABASE_REPLICA_MAX_LAG and (self.lag.get(alias) or 0.0) <= settings.DATABASE_REPLICA_MAX_LAG:
                logger.warning("Replica %s is left out: %.1f s behind the primary", alias, lag)
        self.lag[alias] = lag
        return lag

    def leave_out(self, alias: str) -> None:
        """A query failed there: no reads until the next check finds it back."""
        self.lag[alias] = None
        self.checked_at[alias] = time.monotonic()
        close_quietly(alias)

    def choose(self) -> str | None:
        candidates = [alias for alias in settings.DATABASE_REPLICAS if self.usable(alias)]
        return random.choice(candidates) if candidates else None


def close_quietly(alias: str) -> None:
    try:
        connections[alias].close()
    except DatabaseError:
        pass


health = ReplicaHealth()


# --- the router ------------------------------------------------------------------------------

class ReplicaRouter:
    """Reads go where the request's Route allows; writes and migrations always to the primary."""

    def db_for_read(self, model, **hints):
        route = _route.get()
        if route is None or not route.may_lag or connections[PRIMARY].in_atomic_block:
            return PRIMARY
        if route.alias is None:  # chosen once: a request's reads see one database's snapshot
            route.alias = health.choose() or PRIMARY
        return route.alias

    def db_for_write(self, model, **hints):
        return PRIMARY

    def allow_relation(self, obj1, obj2, **hints):
        return True  # every alias holds the same rows

    def allow_migrate(self, db, app_label, **hints):
        return db == PRIMARY


# --- the middleware --------------------------------------------------------------------------

def client_key(request) -> str | None:
    """The shared-cache key that pins an API client to the primary (by its Authorization header)."""
    authorization = request.headers.get("Authorization")
    if not authorization:
        return None
    return "replica-pin:" + hashlib.sha256(authorization.encode()).hexdigest()


def pinned_to_primary(request) -> bool:
    """This client wrote a moment ago, or public content changed a moment ago (one cache round trip)."""
    if PIN_COOKIE in request.COOKIES:
        return True
    keys = [CONTENT_CHANGED_KEY, *filter(None, [client_key(request)])]
    try:
        return bool(cache.get_many(keys))
    except Exception:  # the cache is away: we cannot tell, so read what was written
        logger.warning("The shared cache is unavailable: %s reads the primary", request.path)
        return True


def may_lag(request) -> bool:
    return (request.method in SAFE_METHODS
            and settings.SESSION_COOKIE_NAME not in request.COOKIES
            and not request.path.startswith(PRIMARY_ONLY_PREFIXES)
            and not pinned_to_primary(request))


def remember_write(request, response) -> None:
    """This client reads the primary for settings.DATABASE_REPLICA_PIN_SECONDS: its own writes are there first."""
    seconds = settings.DATABASE_REPLICA_PIN_SECONDS
    key = client_key(request)
    if key is not None:
        try:
            cache.set(key, 1, timeout=seconds)
        except Exception:
            logger.warning("The shared cache is unavailable: the read-your-writes pin of %s is not kept",
                           request.path)
    if not request.path.startswith("/api/"):
        response.set_cookie(PIN_COOKIE, "1", max_age=int(seconds) + 1, httponly=True, samesite="Lax",
                            secure=settings.SESSION_COOKIE_SECURE)


class ReplicaRoutingMiddleware:
    """Lets a reader's reads go to a replica, and answers again from the primary if the replica fails.

    Sits just inside DatabaseOutageMiddleware, so its ``process_exception`` runs first: a
    database error from a replica is a retry here, not a 503 there.
    """

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        if request.method not in SAFE_METHODS:
            response = self.get_response(request)
            remember_write(request, response)
            return response
        route = Route(may_lag=may_lag(request))
        token = _route.set(route)
        try:
            response = self.get_response(request)
            if route.failed:
                health.leave_out(route.replica)
                logger.warning("%s %s: replica %s failed; answered from the primary",
                               request.method, request.path, route.replica)
                route.may_lag, route.alias = False, PRIMARY
                response = self.get_response(request)
            return response
        finally:
            _route.reset(token)

    def process_exception(self, request, exception):
        route = _route.get()
        # Not a replica's request (the retry on the primary included): DatabaseOutageMiddleware's 503.
        if route is None or route.replica is None or not isinstance(exception, (OperationalError, InterfaceError)):
            return None
        route.failed = True
        return HttpResponse(status=503)  # only the inner middleware sees it: __call__ answers again
