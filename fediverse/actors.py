"""The actors readers can follow: The Wire, the blog, each topic and each author with a handle.

Only what readers can already reach is an actor: a topic with a published digest, an author with a
published post (``published()``), so a handle never reveals a draft.
"""
from dataclasses import dataclass

from django.templatetags.static import static
from django.urls import reverse

from blog.models import Author, Post
from digests.models import Digest, Topic

from . import handles
from .models import ActorKey

AS_CONTEXT = ["https://www.w3.org/ns/activitystreams", "https://w3id.org/security/v1",
              {"toot": "http://joinmastodon.org/ns#", "discoverable": "toot:discoverable",
               "indexable": "toot:indexable"}]
PUBLIC = "https://www.w3.org/ns/activitystreams#Public"
ICON = "img/logo.svg"


@dataclass
class Actor:
    """One followable account: its handle, what it is (``kind``) and the row behind it, if any."""

    handle: str
    kind: str  # "wire", "blog", "topic" or "author"
    name: str
    summary: str
    page: str  # the HTML page's path
    row: Topic | Author | None = None

    @property
    def type(self) -> str:
        """Person for authors; Group-like accounts show on Mastodon as followable too, but a Service is
        what Mastodon labels "Automated" -- The Wire, the blog and topics are publications: ``Service``."""
        return "Person" if self.kind == "author" else "Service"

    def id(self, request) -> str:
        return request.build_absolute_uri(reverse("fediverse:actor", args=[self.handle]))

    def items(self):
        """What this actor publishes, newest first: the outbox's Articles."""
        if self.kind == "author":
            return Post.objects.published().by_author(self.row)
        if self.kind == "blog":
            return Post.objects.published()
        digests = Digest.objects.published()
        return digests.filter(topic=self.row) if self.kind == "topic" else digests

    def document(self, request) -> dict:
        """The actor as ActivityStreams JSON: what Mastodon reads to show and follow the account."""
        own = self.id(request)
        key = ActorKey.objects.for_handle(self.handle)
        return {
            "@context": AS_CONTEXT,
            "id": own,
            "type": self.type,
            "name": self.name,
            "preferredUsername": self.handle,
            "summary": self.summary,
            "url": request.build_absolute_uri(self.page),
            "icon": {"type": "Image", "mediaType": "image/svg+xml", "url": request.build_absolute_uri(static(ICON))},
            "inbox": own + "/inbox",
            "outbox": own + "/outbox",
            "followers": own + "/followers",
            "endpoints": {"sharedInbox": request.build_absolute_uri("/inbox")},
            "publicKey": {"id": own + "#main-key", "owner": own, "publicKeyPem": key.public_key_pem},
            "manuallyApprovesFollowers": False,
            "discoverable": True,
            "indexable": True,
            "published": key.created_at.isoformat(),
        }


def wire() -> Actor:
    return Actor(handles.WIRE, "wire", "The Wire — RepoJournal", "Daily digests of what shipped in the open-source "
                 "repositories RepoJournal follows.", reverse("digests:index"))


def blog() -> Actor:
    return Actor(handles.BLOG, "blog", "RepoJournal", "Long-form posts from RepoJournal.", reverse("blog:index"))


def of_topic(topic: Topic) -> Actor:
    return Actor(topic.slug, "topic", f"The Wire: {topic.name}", topic.description or f"The Wire's digests on "
                 f"{topic.name}.", topic.get_absolute_url(), topic)


def of_author(author: Author) -> Actor | None:
    """The author's actor; none without a handle, or with one stored before handles were checked that
    no actor URL can carry."""
    if not author.handle or not handles.well_formed(author.handle):
        return None
    return Actor(handles.normalise(author.handle), "author", author.name, author.bio, author.get_absolute_url(), author)


def own_actor(author: Author) -> Actor | None:
    """The author's actor, unless their handle clashes with an account that wins it (``find``'s order)."""
    actor = of_author(author)
    holder = find(actor.handle) if actor is not None else None
    return actor if holder is not None and holder.row == author else None


def find(handle: str) -> Actor | None:
    """The actor `handle` names, or None (fixed actors first, then topics, then authors: see checks.py)."""
    wanted = handles.normalise(handle)
    if wanted == handles.WIRE:
        return wire()
    if wanted == handles.BLOG:
        return blog()
    topic = Topic.objects.published().filter(slug__iexact=wanted).first()
    if topic is not None:
        return of_topic(topic)
    author = Author.objects.published().filter(handle__iexact=wanted).order_by("pk").first()
    return of_author(author) if author is not None else None


def at_page(path: str) -> Actor | None:
    """The actor whose HTML page is at `path` (WebFinger's URL form), or None."""
    from django.urls import Resolver404, resolve

    try:
        match = resolve(path)
    except Resolver404:
        return None
    if match.view_name == "digests:index":
        return wire()
    if match.view_name == "blog:index":
        return blog()
    if match.view_name == "digests:topic":
        topic = Topic.objects.published().filter(slug=match.kwargs["slug"]).first()
        return of_topic(topic) if topic is not None else None
    if match.view_name in ("blog:author", "fediverse:actor"):
        if match.view_name == "fediverse:actor":
            return find(match.kwargs["handle"])
        author = Author.objects.published().filter(slug=match.kwargs["slug"]).first()
        return own_actor(author) if author is not None else None
    return None
