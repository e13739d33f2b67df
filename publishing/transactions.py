"""One on-commit callback per transaction that later writes of the same transaction add to.

A transaction that writes fifty citations needs one purge row and one announcement per item,
not fifty. The first write registers a callback object and keeps it on the connection under a
name; later writes find it there and add to it. Django drops the callbacks of a rolled-back
transaction (or savepoint), so a callback counts as this transaction's only while it is still
among the connection's registered ones (``connection.run_on_commit``: tests/test_library_internals.py).
"""
from abc import ABC, abstractmethod

from django.db import transaction


class OnCommit(ABC):
    """A callback that writes of one transaction add to until it runs, once, at the commit."""

    ran = False

    def __call__(self) -> None:
        self.ran = True
        self.run()

    @abstractmethod
    def run(self) -> None:
        """What the commit does with what the transaction's writes added (queue a purge, announce items)."""


def pending_callback(name: str) -> OnCommit | None:
    """The open transaction's callback kept under `name`, or None (none yet, ran, rolled back, no transaction)."""
    connection = transaction.get_connection()
    callback = connection.__dict__.get(name)
    if callback is None or callback.ran or not connection.in_atomic_block:
        return None
    return callback if any(registered is callback for _, registered, _ in connection.run_on_commit) else None


def register_callback(name: str, callback: OnCommit, *, robust: bool = False) -> None:
    """Run `callback` when the open transaction commits (now, outside one), findable by ``pending_callback``."""
    transaction.get_connection().__dict__[name] = callback
    transaction.on_commit(callback, robust=robust)
