"""Handles: the name before the @ in ``@wire@host``. One namespace for The Wire, the blog, topics and authors.

Remote servers know an actor only by its handle, so two actors may never share one (WebFinger could
not tell them apart) and words our own URLs or common server software use are refused.
"""
import re

from django.core.exceptions import ValidationError

WIRE, BLOG = "wire", "blog"
FIXED = (WIRE, BLOG)
RESERVED = frozenset({
    "admin", "api", "ap", "inbox", "outbox", "followers", "following", "well-known", ".well-known", "static",
    "media", "nodeinfo", "webfinger", "host-meta", "actor", "actors", "users", "user", "root", "system",
    "support", "help", "about", "search", "sitemap", "robots", "health", "webhooks", "newsletters", "preview",
    "posts", "tags", "topics", "authors", "repos", "edit-bar", "instance", "relay", "public", "null",
})


#: What a handle may be: the characters Mastodon allows in a username (and a topic's slug has), nothing that
#: would not fit in an ``acct:`` URI or an ``/ap/actors/<handle>`` path.
PATTERN = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]*")


def well_formed(handle: str) -> bool:
    return bool(PATTERN.fullmatch(handle.strip()))


def normalise(handle: str) -> str:
    """Handles compare without case, as WebFinger's ``acct:`` resource does on Mastodon."""
    return handle.strip().lower()


def reserved(handle: str) -> bool:
    return normalise(handle) in RESERVED


def holders(handle: str) -> list[tuple[str, int | None, str]]:
    """Who holds `handle` now: ``(model label, pk, description)`` each (the fixed actors have no row)."""
    from blog.models import Author
    from digests.models import Topic

    wanted = normalise(handle)
    found = [("", None, f"the {wanted} actor")] if wanted in FIXED else []
    found += [("digests.topic", topic.pk, f"topic “{topic.name}”")
              for topic in Topic.objects.filter(slug__iexact=wanted).only("name")]
    found += [("blog.author", author.pk, f"author “{author.name}”")
              for author in Author.objects.filter(handle__iexact=wanted).only("name")]
    return found


def check_handle(handle: str, *, instance=None) -> None:
    """Raise ValidationError if `handle` is reserved or another actor (not `instance`) holds it.

    Called by the topic and author admin forms (their ``clean``); `instance` is the row being edited.
    """
    if not handle:
        return
    if not well_formed(handle):
        raise ValidationError(f"“{handle}” cannot name a fediverse account: use letters, digits, “_”, “.” and “-”.")
    if reserved(handle):
        raise ValidationError(f"“{handle}” is reserved: it cannot name a fediverse account here.")
    own = (instance._meta.label_lower, instance.pk) if instance is not None and instance.pk else None
    others = [description for label, pk, description in holders(handle) if (label, pk) != own]
    if others:
        raise ValidationError(f"“{handle}” is already the fediverse handle of {', '.join(others)}: "
                              "topics' slugs and authors' handles share one namespace.")


def clashes() -> list[str]:
    """Every handle held by more than one actor or reserved: what the system check reports."""
    from blog.models import Author
    from digests.models import Topic

    held: dict[str, list[str]] = {name: [f"the {name} actor"] for name in FIXED}
    for slug, name in Topic.objects.values_list("slug", "name"):
        held.setdefault(normalise(slug), []).append(f"topic “{name}”")
    for handle, name in Author.objects.exclude(handle="").values_list("handle", "name"):
        held.setdefault(normalise(handle), []).append(f"author “{name}”")
    problems = [f"“{handle}” is held by {', '.join(names)}" for handle, names in held.items() if len(names) > 1]
    problems += [f"“{handle}” is reserved but held by {', '.join(names)}" for handle, names in held.items()
                 if handle in RESERVED]
    return problems
