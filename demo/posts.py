"""Parser and importer for the blog's "Recent Posts" index (demo/seeds/002_*.txt).

The index shows, per post: ordered authors with optional @handles, a date, the
tags run together into one word, an optional disclosure line and an excerpt,
then "Continue reading →" glued to the next post's byline. It shows no titles,
so titles, slugs and the tag vocabulary come from demo/recent_posts.json.
"""
import datetime
import json
import re
from dataclasses import dataclass
from pathlib import Path

from django.db import transaction
from django.utils.text import slugify

from blog.models import Author, Post, PostAuthor
from publishing.workflow import Status

from .wire import SeedFormatError, noon_utc, parse_long_date, sync_fields

SEED_DATA = Path(__file__).resolve().parent / "recent_posts.json"
CONTINUE = "Continue reading →"
BYLINE_RE = re.compile(r"^(?P<authors>.+) · (?P<date>[A-Z][a-z]+ \d{1,2}, \d{4})$")
AUTHOR_RE = re.compile(r"^(?P<name>[^()@]+?)(?: \(@(?P<handle>[A-Za-z0-9_-]+)\))?$")


@dataclass
class SeedPost:
    authors: list[tuple[str, str]]  # (name, handle or "")
    date: datetime.date
    tags: list[str]
    disclosure: str
    excerpt: str


def split_tags(run: str, vocabulary: list[str]) -> list[str]:
    """Split tags that were run together, using the fewest words of `vocabulary` that cover `run` exactly."""
    best: list[list[str] | None] = [None] * (len(run) + 1)
    best[0] = []
    for end in range(1, len(run) + 1):
        for tag in vocabulary:
            start = end - len(tag)
            if start >= 0 and best[start] is not None and run[start:end] == tag:
                candidate = best[start] + [tag]
                if best[end] is None or len(candidate) < len(best[end]):
                    best[end] = candidate
    if best[-1] is None:
        raise SeedFormatError(f"Tags {run!r} cannot be split with the vocabulary; add the missing tag to it.")
    return best[-1]


def parse_authors(text: str) -> list[tuple[str, str]]:
    authors = []
    for part in text.split(", "):
        match = AUTHOR_RE.match(part.strip())
        if not match:
            raise SeedFormatError(f"Not an author: {part!r}")
        authors.append((match["name"].strip(), match["handle"] or ""))
    return authors


def parse_recent_posts(text: str, vocabulary: list[str]) -> list[SeedPost]:
    lines = text.splitlines()
    if not lines or lines[0].strip() != "Recent Posts":
        raise SeedFormatError("The index starts with the line 'Recent Posts'.")
    chunks = "\n".join(lines[1:]).split(CONTINUE)
    return [_parse_post(chunk, vocabulary) for chunk in chunks if chunk.strip()]


def _parse_post(chunk: str, vocabulary: list[str]) -> SeedPost:
    byline_line, tag_line, *rest = [line.strip() for line in chunk.strip().splitlines() if line.strip()]
    byline = BYLINE_RE.match(byline_line)
    if not byline:
        raise SeedFormatError(f"Not a post byline: {byline_line!r}")
    disclosure = rest.pop(0) if rest and rest[0].startswith("Disclosure.") else ""
    if not rest:
        raise SeedFormatError(f"The post by {byline['authors']} has no excerpt.")
    return SeedPost(
        authors=parse_authors(byline["authors"]),
        date=parse_long_date(byline["date"]),
        tags=split_tags(tag_line, vocabulary),
        disclosure=disclosure,
        excerpt="\n\n".join(rest),
    )


def load_seed_data(path: Path = SEED_DATA) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


def _author(name: str, handle: str) -> Author:
    author, _ = Author.objects.get_or_create(slug=slugify(handle or name), defaults={"name": name, "handle": handle})
    sync_fields(author, name=name, handle=handle)
    return author


@transaction.atomic
def import_recent_posts(text: str, data: dict | None = None) -> list[tuple[Post, str]]:
    """Store every post of the index, published on its date; returns (post, outcome) pairs."""
    data = data or load_seed_data()
    seeds = parse_recent_posts(text, data["tag_vocabulary"])
    if len(seeds) != len(data["posts"]):
        raise SeedFormatError(f"The index has {len(seeds)} posts but the seed data describes {len(data['posts'])}.")
    return [_import_post(seed, meta) for seed, meta in zip(seeds, data["posts"])]


def _import_post(seed: SeedPost, meta: dict) -> tuple[Post, str]:
    if not seed.excerpt.startswith(meta["starts"]):
        raise SeedFormatError(f"Seed data for {meta['slug']!r} does not match the post starting {seed.excerpt[:40]!r}.")
    post = Post.objects.filter(slug=meta["slug"]).first()
    created = post is None
    post = post or Post(slug=meta["slug"])
    changed = sync_fields(
        post,
        title=meta["title"],
        body=seed.excerpt,
        excerpt=seed.excerpt,
        disclosure=seed.disclosure,
        status=Status.PUBLISHED,
        published_at=noon_utc(seed.date),
    )
    changed |= _sync_authors(post, [_author(name, handle) for name, handle in seed.authors])
    if sorted(tag.name for tag in post.tags.all()) != sorted(seed.tags):
        post.tags.set(seed.tags)
        changed = True
    return post, "created" if created else ("updated" if changed else "unchanged")


def _sync_authors(post: Post, authors: list[Author]) -> bool:
    current = [(link.author_id, link.position) for link in post.post_authors.all()]
    wanted = [(author.pk, position) for position, author in enumerate(authors)]
    if current == wanted:
        return False
    post.post_authors.all().delete()
    for position, author in enumerate(authors):  # save() so the page cache hears of the change
        PostAuthor.objects.create(post=post, author=author, position=position)
    return True
