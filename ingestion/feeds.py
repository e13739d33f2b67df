"""Atom/RSS feed entries -> blog posts, keyed by entry id.

feedparser does the parsing, resolves relative links against the feed's
address and drops dangerous markup; the post body is sanitised again by
``publishing.rendering`` when the post is saved. Re-fetching a feed updates
the post an entry became (found through FeedEntry) instead of adding another.

A post keeps its source's byline and date: the entry's authors, else the feed's
(an Atom feed-level ``<author>`` covers entries naming none), else the source's
default authors; ``published_at`` is the entry's own date even while the post is a
draft, so publishing a 2013 entry later dates it 2013. A post with no author at all
arrives as a draft whatever the source says (``Post.check_publishable``: no path
publishes a post without a byline).
"""
import calendar
import datetime
import hashlib
import re

import egress
import feedparser
import httpx
from django.db import transaction
from django.utils import timezone
from django.utils.html import strip_tags
from django.utils.text import Truncator, slugify

from blog.models import Author, Post, PostAuthor
from publishing.workflow import Status

from .importers import Counts
from .models import FeedEntry, FeedSource, IngestionRun
from .runs import recorded_run

BLANK_LINES = re.compile(r"\n\s*\n")
EXCERPT_WORDS = 60


class FeedError(Exception):
    """The feed could not be fetched or is not a feed (worth retrying later)."""


class FeedRefused(Exception):
    """The feed's address (or a redirect's) is one outbound requests may not reach: not retried."""


def fetch(source: FeedSource, *, timeout: float = 30.0):
    """GET the feed conditionally; returns the parsed feed, or None when it has not changed (304).

    Through ``egress.client()``: the address connected to (each redirect's too) is checked,
    so a feed URL that now resolves inside raises FeedRefused even if it passed the admin form.
    """
    headers = {"User-Agent": "RepoJournal-feeds"}
    if source.etag:
        headers["If-None-Match"] = source.etag
    if source.modified:
        headers["If-Modified-Since"] = source.modified
    try:
        with egress.client(timeout=timeout, follow_redirects=True) as http:
            response = http.get(source.url, headers=headers)
    except egress.RefusedAddress as exc:
        raise FeedRefused(f"{source.url}: refused: {exc}") from exc
    except httpx.HTTPError as exc:
        raise FeedError(f"{source.url}: {type(exc).__name__}: {exc}") from exc
    if response.status_code == 304:
        return None
    if not response.is_success:
        raise FeedError(f"{source.url}: HTTP {response.status_code}")
    parsed = feedparser.parse(response.content, response_headers={
        "content-location": str(response.url), "content-type": response.headers.get("content-type", "")})
    if parsed.bozo and not parsed.entries:
        raise FeedError(f"{source.url}: not a feed ({parsed.get('bozo_exception')})")
    source.etag = response.headers.get("etag", "")[:300]
    source.modified = response.headers.get("last-modified", "")[:100]
    return parsed


def fetch_source(source: FeedSource) -> Counts:
    """Fetch one feed and upsert its entries, recording an IngestionRun; a failure schedules a retry
    with backoff (``FeedSource.record_failure``) and is raised, a success resets the schedule. A refused
    address is recorded the same way, so the admin shows why (the editor may fix the URL)."""
    try:
        counts = _fetch_and_upsert(source)
    except (FeedError, FeedRefused) as exc:
        source.record_failure(str(exc))
        raise
    source.record_success()
    return counts


def _fetch_and_upsert(source: FeedSource) -> Counts:
    with recorded_run(IngestionRun.Source.FEED, source.url) as (_run, counts):
        parsed = fetch(source)
        for entry in parsed.entries if parsed else []:
            counts.add(upsert_entry(source, entry, parsed.feed))
        if parsed and not source.title:
            source.title = strip_tags(parsed.feed.get("title", ""))[:300]
        source.last_fetched_at = timezone.now()
        source.save(update_fields=["etag", "modified", "last_fetched_at", "title"])
    return counts


def entry_key(entry) -> str:
    """The entry's id; feeds without ids fall back to the link, then to a hash of the title."""
    key = entry.get("id") or entry.get("link")
    return (key or "title:" + hashlib.sha256(entry.get("title", "").encode()).hexdigest())[:500]


def _html(entry) -> str:
    """Entry HTML as one raw-HTML Markdown block (no blank lines), so Markdown leaves it alone."""
    content = entry.get("content") or []
    html = content[0].get("value", "") if content else entry.get("summary", "")
    return f"<div>\n{BLANK_LINES.sub(chr(10), html.strip())}\n</div>" if html.strip() else ""


def _when(entry) -> datetime.datetime | None:
    moment = entry.get("published_parsed") or entry.get("updated_parsed")
    return datetime.datetime.fromtimestamp(calendar.timegm(moment), tz=datetime.UTC) if moment else None


def post_fields(source: FeedSource, entry) -> dict:
    link = entry.get("link", "")
    excerpt = " ".join(strip_tags(entry.get("summary", "")).split())
    return {
        "title": strip_tags(entry.get("title", "")).strip()[:300] or "Untitled",
        "body": _html(entry),
        "excerpt": Truncator(excerpt).words(EXCERPT_WORDS, truncate=" …"),
        "disclosure": f"Originally published at {link}"[:300] if link.startswith(("http://", "https://")) else "",
    }


def _names(authors) -> list[str]:
    return [author.get("name", "").strip() for author in authors or [] if (author.get("name") or "").strip()]


def _authors(source: FeedSource, entry, feed=None) -> list[Author]:
    """The entry's authors, else the feed's, else the source's defaults."""
    names = _names(entry.get("authors")) or _names((feed or {}).get("authors"))
    authors = [Author.objects.get_or_create(slug=slugify(name)[:140] or "author", defaults={"name": name[:120]})[0]
               for name in names]
    return list(dict.fromkeys(authors)) or list(source.default_authors.all())


def _tags(source: FeedSource, entry) -> list[str]:
    terms = [(tag.get("term") or tag.get("label") or "").strip()[:100] for tag in entry.get("tags", [])]
    return list(dict.fromkeys(term for term in [*terms, *source.tag_list()] if term))


def _unique_slug(title: str) -> str:
    base = slugify(title)[:180] or "feed-entry"
    slug, n = base, 1
    while Post.objects.filter(slug=slug).exists():
        n += 1
        slug = f"{base}-{n}"
    return slug


def _set_byline(post: Post, authors: list[Author], tags: list[str]) -> bool:
    """Replace authors and tags if they differ; True if anything changed."""
    current_authors = [link.author_id for link in post.post_authors.all()]
    current_tags = sorted(post.tags.names())
    if current_authors == [a.pk for a in authors] and current_tags == sorted(tags):
        return False
    post.post_authors.all().delete()
    PostAuthor.objects.bulk_create(PostAuthor(post=post, author=a, position=i) for i, a in enumerate(authors))
    post.tags.set(tags)
    return True


@transaction.atomic
def upsert_entry(source: FeedSource, entry, feed=None) -> str:
    """Create the entry's post, or update it in place; returns created/updated/unchanged.

    A new post arrives as a draft unless the source publishes entries and it has an
    author; either way it carries the entry's date. An existing post keeps its status
    (the editors own it from then on); one imported without a date gets the entry's.
    """
    fields = post_fields(source, entry)
    authors = _authors(source, entry, feed)
    link = FeedEntry.objects.filter(source=source, entry_id=entry_key(entry)).select_related("post").first()
    if link is None:
        published = source.publish_entries and bool(authors)
        post = Post.objects.create(slug=_unique_slug(fields["title"]), status=Status.PUBLISHED if published
                                   else Status.DRAFT, published_at=_when(entry), **fields)
        FeedEntry.objects.create(source=source, entry_id=entry_key(entry), post=post)
        _set_byline(post, authors, _tags(source, entry))
        return "created"
    post = link.post
    changed = {name: value for name, value in fields.items() if getattr(post, name) != value}
    if post.published_at is None and _when(entry) is not None:
        changed["published_at"] = _when(entry)
    for name, value in changed.items():
        setattr(post, name, value)
    if changed:
        post.save()
    bylined = _set_byline(post, authors, _tags(source, entry))
    return "updated" if changed or bylined else "unchanged"
