"""Standard Webhooks signatures, made by the `standardwebhooks` library subscribers verify with.

``webhook-signature`` is ``v1,<base64 HMAC-SHA256 of "{id}.{timestamp}.{body}">`` keyed with the
base64-decoded secret; during a rotation both secrets sign and the header carries both,
space-separated, as the specification allows, so a subscriber with either secret accepts.
"""
import datetime

from standardwebhooks import Webhook


def signature_header(secrets: list[str], msg_id: str, timestamp: int, body: str) -> str:
    moment = datetime.datetime.fromtimestamp(timestamp, tz=datetime.timezone.utc)
    return " ".join(Webhook(secret).sign(msg_id=msg_id, timestamp=moment, data=body) for secret in secrets)


def headers(secrets: list[str], msg_id: str, timestamp: int, body: str) -> dict[str, str]:
    """The request headers of one attempt (`timestamp`: Unix seconds of this attempt, not of the event)."""
    return {
        "content-type": "application/json",
        "webhook-id": msg_id,
        "webhook-timestamp": str(timestamp),
        "webhook-signature": signature_header(secrets, msg_id, timestamp, body),
        "user-agent": "RepoJournal-Webhooks/1",
    }
