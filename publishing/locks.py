"""Lock conflicts: told apart from an outage, tried once more, and answered as what they are.

Two writers that need the same rows at the same moment can lose to each other. PostgreSQL aborts one
with a deadlock (SQLSTATE 40P01) or, above READ COMMITTED, a serialization failure (40001); a
``lock_timeout`` gives up with 55P03; SQLite, one writer at a time, gives up after its busy timeout
("database is locked"). Each is an ``OperationalError``, as a lost connection is, but the database is
there: the losing transaction was rolled back whole, and the same write a moment later normally
succeeds. So a write that does all its writing in a transaction of its own runs through
``retry_on_lock_conflict``: once more, at once. What loses twice is answered as a conflict -- the
API's 409 and a page for the rest (``repojournal.outages``), the admin's form again with what the
editor typed (``publishing.admin``) -- never "the database is unavailable", which is for a lost
connection. The lock order that keeps our own writes from deadlocking is in docs/architecture.md.
"""
import logging

from django.db import DEFAULT_DB_ALIAS, OperationalError, transaction

logger = logging.getLogger(__name__)

#: PostgreSQL's codes for a transaction that lost to another over locks: deadlock_detected,
#: serialization_failure, lock_not_available (``lock_timeout``, ``NOWAIT``).
POSTGRESQL_CONFLICTS = frozenset({"40P01", "40001", "55P03"})
#: SQLite's primary result codes for the same: SQLITE_BUSY ("database is locked"), SQLITE_LOCKED.
SQLITE_CONFLICTS = frozenset({5, 6})

#: What an editor reads in the admin's form, and (``API_DETAIL``) an API client, after the retry lost too.
ADMIN_MESSAGE = ("Nothing was saved: someone else was saving some of the same items at the same moment. "
                 "Your changes are still in the form below; save again.")
API_DETAIL = ("Nothing was written: another write changed some of the same items at the same moment. "
              "Send the request again.")


def is_lock_conflict(error: BaseException) -> bool:
    """True if `error` (Django's wrapper or the driver's own) is a lost lock conflict, not an outage."""
    for candidate in (error, error.__cause__):
        if getattr(candidate, "sqlstate", None) in POSTGRESQL_CONFLICTS:  # psycopg 3
            return True
        if getattr(candidate, "pgcode", None) in POSTGRESQL_CONFLICTS:  # psycopg2
            return True
        code = getattr(candidate, "sqlite_errorcode", None)  # extended codes keep the primary one in the low byte
        if code is not None and code & 0xFF in SQLITE_CONFLICTS:
            return True
    return False


def retry_on_lock_conflict(function, *args, using: str = DEFAULT_DB_ALIAS, **kwargs):
    """Call `function`; if it loses a lock conflict, call it once more; what it returns.

    `function` must do all its writing in a transaction it opens itself (Django's admin change form,
    an API write's ``atomic`` block), so a loss has undone all of it. Inside a caller's transaction
    nothing is retried: the caller's transaction is aborted, and the loss is the caller's to answer.
    """
    try:
        return function(*args, **kwargs)
    except OperationalError as error:
        if not is_lock_conflict(error) or transaction.get_connection(using).in_atomic_block:
            raise
        logger.warning("A write lost a lock conflict and is tried once more: %s", str(error).strip())
    return function(*args, **kwargs)
