"""Sending deliveries in batches. Filled in by the sending work."""


def send_due(message_id: int | None = None) -> int:
    raise NotImplementedError


def sweep() -> str:
    raise NotImplementedError
