"""Confirmation emails (double opt-in). Filled in by the subscribing work."""


def send(subscriber_id: int) -> bool:
    raise NotImplementedError


def sweep() -> int:
    raise NotImplementedError
