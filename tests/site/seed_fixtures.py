"""Build the seed digests (demo/seeds/000_*, 001_*) and posts (002_*) with factories.

Until ``import_seeds`` lands these tests build the seed documents themselves,
reading the digest documents line by line so the expectations come from the
documents, not from copies typed into the tests.
"""
import datetime
import re
from dataclasses import dataclass, field
from pathlib import Path

from django.conf import settings
from django.utils import timezone

from blog.factories import AuthorFactory, PostFactory
from digests.factories import ActionItemFactory, DigestFactory, DigestReferenceFactory, ReferenceFactory, TopicFactory
from digests.models import Reference, Repository

ACTION_RE = re.compile(r"^- → (?P<text>.+) (?P<repo>[\w.-]+/[\w.-]+) \[(?P<priority>\w+)\]$")
REFERENCE_RE = re.compile(r"^- \[(?P<number>\d+)\] (?P<title>.+?)(?P<arrow> ↗)? (?P<repo>[\w.-]+/[\w.-]+)$")
FAQ_DATE_RE = re.compile(r"on (\w+ \d+, \d{4})\?$")
COMMIT_NUMBER_RE = re.compile(r"\(#(\d+)\)$")


@dataclass
class SeedDigest:
    kicker: str
    headline: str
    topic: str
    summary: str
    body: str
    actions: list[dict] = field(default_factory=list)
    references: list[dict] = field(default_factory=list)
    faq: list[tuple[str, str]] = field(default_factory=list)
    date: datetime.date | None = None


def seed_path(prefix: str) -> Path:
    return next(Path(settings.SEEDS_DIR).glob(f"{prefix}_*.txt"))


def read_seed_digest(prefix: str) -> SeedDigest:
    lines = seed_path(prefix).read_text(encoding="utf-8").splitlines()
    seed = SeedDigest(kicker=lines[0], headline=lines[1], topic=lines[2].rsplit("About ", 1)[1],
                      summary=lines[3], body=lines[4])
    section = None
    for line in lines[5:]:
        if line in {"Action items", "References", "FAQ"}:
            section = line
        elif section == "Action items":
            seed.actions.append(ACTION_RE.match(line).groupdict())
        elif section == "References":
            seed.references.append(REFERENCE_RE.match(line).groupdict())
        elif section == "FAQ":
            seed.faq.append(line[2:])
    seed.faq = list(zip(seed.faq[::2], seed.faq[1::2]))
    seed.date = datetime.datetime.strptime(FAQ_DATE_RE.search(seed.faq[0][0]).group(1), "%B %d, %Y").date()
    return seed


def build_seed_digest(prefix: str):
    """The seed digest as an editor would enter it; the FAQ is the generated default."""
    seed = read_seed_digest(prefix)
    topic = TopicFactory(name=seed.topic, slug=seed.topic.lower())
    section, label = seed.kicker.split(" · ")
    digest = DigestFactory(topic=topic, date=seed.date, section=section, label=label, headline=seed.headline,
                           summary=seed.summary, body=seed.body, slug=f"{topic.slug}-{seed.date}")
    for ref in seed.references:
        repository, _ = Repository.objects.get_or_create_by_full_name(ref["repo"], topic=topic)
        commit = COMMIT_NUMBER_RE.search(ref["title"])
        kind = Reference.Kind.COMMIT if commit else Reference.Kind.PULL_REQUEST
        reference = ReferenceFactory(
            repository=repository, kind=kind, title=ref["title"], key=f"{ref['number']}-{prefix}",
            number=int(commit.group(1)) if commit else 90000 + int(ref["number"]),
            url=f"https://github.com/{ref['repo']}/pull/{ref['number']}" if ref["arrow"] else "",
        )
        DigestReferenceFactory(digest=digest, reference=reference, number=int(ref["number"]))
    for position, action in enumerate(seed.actions, start=1):
        repository, _ = Repository.objects.get_or_create_by_full_name(action["repo"], topic=topic)
        ActionItemFactory(digest=digest, repository=repository, text=action["text"], priority=action["priority"],
                          position=position)
    return digest, seed


#: The first posts of the Recent Posts seed (002): byline, date, tags, disclosure.
SEED_POSTS = [
    {"authors": [("Edward Yang", "ezyang")], "date": datetime.date(2026, 6, 1), "tags": ["eager", "cuda", "memory"],
     "disclosure": "This post was drafted by Claude (Anthropic’s coding assistant) with editing from ezyang."},
    {"authors": [("Edward Yang", "ezyang")], "date": datetime.date(2026, 5, 30),
     "tags": ["ai-agents", "code-review", "oss", "llm"], "disclosure": ""},
    {"authors": [("Lucas Kabela", "lucaskabela"), ("Jiani Wang", ""), ("Tianyu Liu", ""), ("Richard Zou", "zou3519"),
                 ("Joe Cummings", ""), ("Milad Mohammadi", "")],
     "date": datetime.date(2026, 5, 6), "tags": ["torchtitan", "rl", "torch.compile", "distributed", "performance"],
     "disclosure": ""},
]


def seed_post_excerpts() -> list[str]:
    """The first sentence of each post's excerpt in 002, in order."""
    text = seed_path("002").read_text(encoding="utf-8")
    blocks = text.split("Continue reading →")
    excerpts = []
    for block in blocks[:len(SEED_POSTS)]:
        lines = [line for line in block.splitlines() if line.strip()]
        body = [line for line in lines[2:] if not line.startswith("Disclosure.")]
        excerpts.append(body[0])
    return excerpts


def build_seed_posts():
    posts = []
    for seed, excerpt in zip(SEED_POSTS, seed_post_excerpts()):
        authors = [
            AuthorFactory(name=name, handle=handle, slug=re.sub(r"\W+", "-", name.lower()))
            for name, handle in seed["authors"]
        ]
        published = timezone.make_aware(datetime.datetime.combine(seed["date"], datetime.time(12)))
        posts.append(PostFactory(authors=authors, tags=seed["tags"], body=excerpt + "\n\nMore of the post.",
                                 disclosure=f"Disclosure. {seed['disclosure']}" if seed["disclosure"] else "",
                                 published_at=published))
    return posts, seed_post_excerpts()
