"""Who has an item's change form open right now, kept in the shared cache (Redis with ``REDIS_URL``).

Each open form beats every ``EDITING_PRESENCE_HEARTBEAT_SECONDS`` (30); an editor is listed until
``EDITING_PRESENCE_TIMEOUT_SECONDS`` (60) after their last beat, or until their tab says it is
leaving (``pagehide``). The cache, not the database: it is shared by every app server, an entry
expires by itself when its tab is gone without a word, and a beat costs no write to PostgreSQL.

Django's cache API cannot list keys, so each item has an index of the user ids present beside one
entry per user. Two beats landing at once may each write the index without the other's id: the
lost id is added again by that editor's next beat, so an editor can be missing for one beat, never
longer, and an entry is never kept past its timeout (each is read with its own expiry).
"""
import datetime

from django.conf import settings
from django.core.cache import cache
from django.utils import timezone


def _item_key(item) -> str:
    return f"editing:presence:{item._meta.label_lower}:{item.pk}"


def _timeout() -> int:
    return settings.EDITING_PRESENCE_TIMEOUT_SECONDS


def beat(item, user, now: datetime.datetime | None = None) -> None:
    """`user` has `item`'s form open: list them (since their first beat) for the next timeout."""
    now = now or timezone.now()
    key = _item_key(item)
    entry_key = f"{key}:{user.pk}"
    entry = cache.get(entry_key)
    since = entry["since"] if entry and _fresh(entry, now) else now.isoformat()
    cache.set(entry_key, {"name": user.get_full_name() or user.get_username(), "since": since,
                          "seen": now.isoformat()}, _timeout())
    listed = [pk for pk in cache.get(key, ()) if pk != user.pk]
    still_there = {int(entry_key.rsplit(":", 1)[1]) for entry_key in cache.get_many([f"{key}:{pk}" for pk in listed])}
    cache.set(key, sorted(still_there | {user.pk}), _timeout())  # the ids whose entries expired leave the index


def leave(item, user) -> None:
    """`user` closed `item`'s form: drop them now rather than at the timeout."""
    cache.delete(f"{_item_key(item)}:{user.pk}")


def others(item, user, now: datetime.datetime | None = None) -> list[dict]:
    """Who else has `item` open: ``{"name", "since"}`` each (since: an aware datetime), earliest first."""
    now = now or timezone.now()
    key = _item_key(item)
    ids = [pk for pk in cache.get(key, ()) if pk != user.pk]
    entries = cache.get_many([f"{key}:{pk}" for pk in ids])
    present = [entry for entry in entries.values() if _fresh(entry, now)]
    return sorted(({"name": entry["name"], "since": datetime.datetime.fromisoformat(entry["since"])}
                   for entry in present), key=lambda entry: entry["since"])


def _fresh(entry: dict, now: datetime.datetime) -> bool:
    """Seen within the timeout (a cache may keep an entry a moment past its expiry; a clock moved in a test)."""
    return now - datetime.datetime.fromisoformat(entry["seen"]) <= datetime.timedelta(seconds=_timeout())
