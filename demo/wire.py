"""Parsers and importers for the documents RepoJournal was designed from.

Two document kinds live here: a digest in The Wire's published text format and
a GitHub pull-request page saved as text. (The blog's "Recent Posts" index is
in demo/posts.py.) Parsing is kept apart from storing: the parsers return plain
dataclasses, so a malformed document fails with a message naming the line
before anything is written, and the importers upsert on natural keys, so
running the import again changes nothing.
"""
import datetime
import re
from dataclasses import dataclass, field

from django.db import transaction
from django.utils.text import slugify

from digests.models import ActionItem, Digest, DigestReference, Reference, Repository, Topic
from publishing.workflow import Status

REPO = r"[A-Za-z0-9][A-Za-z0-9-]*/[A-Za-z0-9._-]+"
ACTION_ITEM_RE = re.compile(rf"^- → (?P<text>.+) (?P<repo>{REPO}) \[(?P<priority>\w+)\]$")
REFERENCE_RE = re.compile(
    rf"^- \[(?P<number>\d+)\] (?P<title>.+?) (?:↗|\(#(?P<pr>\d+)\)) (?P<repo>{REPO})$"
)
BYLINE_RE = re.compile(r"^By (?P<byline>.+?) · Filed(?: (?P<date>[^·]+?))? · About (?P<topic>.+)$")
FAQ_DATE_RE = re.compile(r" on (?P<date>[A-Z][a-z]+ \d{1,2}, \d{4})\?$")
PUBLISH_HOUR = 12  # seeds carry dates only; we file them at noon UTC


class SeedFormatError(ValueError):
    """A document does not follow the format its parser expects."""


def parse_long_date(text: str) -> datetime.date:
    """Parse "June 29, 2026" or "Jun 26, 2026"."""
    for fmt in ("%B %d, %Y", "%b %d, %Y"):
        try:
            return datetime.datetime.strptime(text.strip(), fmt).date()
        except ValueError:
            continue
    raise SeedFormatError(f"Not a date: {text!r}")


def noon_utc(day: datetime.date) -> datetime.datetime:
    return datetime.datetime.combine(day, datetime.time(PUBLISH_HOUR), tzinfo=datetime.UTC)


@dataclass
class SeedReference:
    number: int
    title: str
    repository: str
    pr_number: int | None  # "(#20586)": a landed commit citing its pull request

    @property
    def kind(self) -> str:
        return Reference.Kind.COMMIT if self.pr_number else Reference.Kind.PULL_REQUEST


@dataclass
class SeedDigest:
    section: str
    label: str
    headline: str
    byline: str
    topic: str
    date: datetime.date
    summary: str
    body: str
    action_items: list[tuple[str, str, str]] = field(default_factory=list)  # text, repo, priority
    references: list[SeedReference] = field(default_factory=list)
    faq: list[tuple[str, str]] = field(default_factory=list)


def _split_sections(lines: list[str]) -> dict[str, list[str]]:
    """Split a digest after its text into the "Action items", "References" and "FAQ" blocks."""
    sections: dict[str, list[str]] = {"text": []}
    current = "text"
    for line in lines:
        if line in ("Action items", "References", "FAQ"):
            current = line
            sections[current] = []
        else:
            sections[current].append(line)
    missing = {"References", "FAQ"} - sections.keys()
    if missing:
        raise SeedFormatError(f"Digest has no {' or '.join(sorted(missing))} section.")
    return sections


def _parse_action_items(lines: list[str]) -> list[tuple[str, str, str]]:
    items = []
    for line in lines:
        match = ACTION_ITEM_RE.match(line)
        if not match:
            raise SeedFormatError(f"Not an action item: {line!r}")
        if match["priority"] not in ActionItem.Priority.values:
            raise SeedFormatError(f"Unknown priority [{match['priority']}] in {line!r}")
        items.append((match["text"], match["repo"], match["priority"]))
    return items


def _parse_references(lines: list[str]) -> list[SeedReference]:
    references = []
    for line in lines:
        match = REFERENCE_RE.match(line)
        if not match:
            raise SeedFormatError(f"Not a reference: {line!r}")
        pr_number = int(match["pr"]) if match["pr"] else None
        title = f"{match['title']} (#{pr_number})" if pr_number else match["title"]
        references.append(SeedReference(int(match["number"]), title, match["repo"], pr_number))
    return references


def _parse_faq(lines: list[str]) -> list[tuple[str, str]]:
    if len(lines) % 2 or not all(line.startswith("- ") for line in lines):
        raise SeedFormatError("FAQ must alternate '- question' and '- answer' lines.")
    items = [line[2:] for line in lines]
    return list(zip(items[::2], items[1::2]))


def parse_wire_digest(text: str) -> SeedDigest:
    """Parse a digest in The Wire's text format (see demo/seeds/000_*.txt)."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    if len(lines) < 5 or not lines[0].startswith("The Wire"):
        raise SeedFormatError("A digest starts with its kicker, e.g. 'The Wire · Showcase'.")
    section, _, label = (part.strip() for part in lines[0].partition("·"))
    byline = BYLINE_RE.match(lines[2])
    if not byline:
        raise SeedFormatError(f"Not a byline: {lines[2]!r}")
    sections = _split_sections(lines[3:])
    summary, *body = sections["text"]
    faq = _parse_faq(sections["FAQ"])
    return SeedDigest(
        section=section,
        label=label,
        headline=lines[1],
        byline=byline["byline"],
        topic=byline["topic"],
        date=_digest_date(byline["date"], faq),
        summary=summary,
        body="\n\n".join(body),
        action_items=_parse_action_items(sections.get("Action items", [])),
        references=_parse_references(sections["References"]),
        faq=faq,
    )


def _digest_date(byline_date: str | None, faq: list[tuple[str, str]]) -> datetime.date:
    """The filing date: from the byline, or -- as the seeds leave it empty -- the FAQ's question."""
    if byline_date:
        return parse_long_date(byline_date)
    for question, _answer in faq:
        match = FAQ_DATE_RE.search(question)
        if match:
            return parse_long_date(match["date"])
    raise SeedFormatError("The digest names its date neither in the byline nor in the FAQ.")


@dataclass
class SeedPullRequest:
    repository: str
    number: int
    title: str
    state: str
    author_login: str
    opened_on: datetime.date | None
    body: str


PR_TITLE_RE = re.compile(r"^(?P<title>.+)#(?P<number>\d+)$")
PR_AUTHOR_RE = re.compile(r"^(?P<login>\S+) (?:wants to merge|merged) \d+ commits? into")
PR_OPENED_RE = re.compile(r"^@?(?P<login>\S+) (?P=login) commented (?P<date>[A-Z][a-z]{2} \d{1,2}, \d{4})$")
COMMENT_ROLES = {"Contributor", "Member", "Collaborator", "Owner", "Author"}


def parse_pull_request_page(text: str) -> SeedPullRequest:
    """Parse a GitHub pull-request page saved as text: title, number, state, author, date, body."""
    lines = [line.rstrip() for line in text.splitlines()]
    stripped = [line.strip() for line in lines]
    title_match = next((m for m in map(PR_TITLE_RE.match, stripped) if m), None)
    if not title_match:
        raise SeedFormatError("No '<title>#<number>' line: not a pull-request page.")
    number = int(title_match["number"])
    repo_match = re.search(rf"(?:github\.com|/pr)/(?P<repo>{REPO})/(?:pull/)?{number}\b", text)
    if not repo_match:
        raise SeedFormatError(f"The page never names the repository of pull request #{number}.")
    title_index = stripped.index(title_match.group(0))
    state = next(line for line in stripped[title_index + 1 :] if line)
    author = next((m for m in map(PR_AUTHOR_RE.match, stripped) if m), None)
    opened = next((m for m in map(PR_OPENED_RE.match, stripped) if m), None)
    return SeedPullRequest(
        repository=repo_match["repo"],
        number=number,
        title=title_match["title"].strip(),
        state=state.lower(),
        author_login=author["login"] if author else "",
        opened_on=parse_long_date(opened["date"]) if opened else None,
        body=_pull_request_body(stripped),
    )


def _pull_request_body(lines: list[str]) -> str:
    """The opening comment: after its 'Copy Markdown' / role header, up to the next commenter."""
    start = next(
        (i + 2 for i, line in enumerate(lines[:-1]) if line == "Copy Markdown" and lines[i + 1] in COMMENT_ROLES),
        None,
    )
    if start is None:
        raise SeedFormatError("The page has no opening comment.")
    body: list[str] = []
    for i, line in enumerate(lines[start:], start):
        following = next((later for later in lines[i + 1 :] if later), "")
        if line.startswith("@") and " commented " in following:
            break
        body.append("- " + line[1:].strip() if line.startswith("•") else line)
    return "\n".join(body).strip()


# --- storing -----------------------------------------------------------------


def sync_fields(instance, **values) -> bool:
    """Set `values` on `instance` and save it only if something differs; True if saved."""
    changed = [name for name, value in values.items() if getattr(instance, name) != value]
    for name in changed:
        setattr(instance, name, values[name])
    if changed:
        instance.save()
    return bool(changed)


def _repository(full_name: str, topic: Topic | None = None) -> Repository:
    repository, _ = Repository.objects.get_or_create_by_full_name(full_name, topic=topic)
    if topic and repository.topic_id is None:
        sync_fields(repository, topic=topic)
    return repository


@transaction.atomic
def import_pull_request(seed: SeedPullRequest) -> tuple[Reference, str]:
    """Store a pull-request page as a Reference keyed by its number."""
    repository = _repository(seed.repository)
    return Reference.objects.upsert(
        repository,
        Reference.Kind.PULL_REQUEST,
        str(seed.number),
        number=seed.number,
        title=seed.title,
        url=f"https://github.com/{seed.repository}/pull/{seed.number}",
        author_login=seed.author_login,
        state=seed.state,
        body=seed.body,
        opened_at=noon_utc(seed.opened_on) if seed.opened_on else None,
    )


def _import_reference(seed: SeedReference, topic: Topic, day: datetime.date) -> tuple[Reference, str]:
    """Find or store a cited reference.

    Seed digests give titles, not GitHub ids. A pull request already known under
    its number (e.g. from the pull-request page) is matched by title; anything
    else is keyed by its title until ingestion supplies the real id. Commits
    cited as "Title (#N)" landed that day, so they count as merged on it.
    """
    repository = _repository(seed.repository, topic)
    if seed.kind == Reference.Kind.PULL_REQUEST:
        known = repository.references.filter(kind=seed.kind, title=seed.title).exclude(key__startswith="seed:").first()
        if known:
            return known, "unchanged"
        url = f"https://github.com/{seed.repository}/pulls?q=" + "+".join(["is:pr", *seed.title.split()])
        extra = {"url": url}
    else:
        extra = {
            "number": seed.pr_number,
            "url": f"https://github.com/{seed.repository}/pull/{seed.pr_number}",
            "state": "merged",
            "merged_at": noon_utc(day),
        }
    return Reference.objects.upsert(
        repository, seed.kind, "seed:" + slugify(seed.title)[:150], title=seed.title, **extra
    )


@transaction.atomic
def import_digest(seed: SeedDigest) -> tuple[Digest, str]:
    """Store a seed digest, published on its date, with its references, action items and FAQ."""
    topic, _ = Topic.objects.get_or_create(slug=slugify(seed.topic), defaults={"name": seed.topic})
    digest = Digest.objects.filter(topic=topic, date=seed.date).first()
    created = digest is None
    digest = digest or Digest(topic=topic, date=seed.date)
    changed = sync_fields(
        digest,
        section=seed.section,
        label=seed.label,
        headline=seed.headline,
        byline=seed.byline,
        summary=seed.summary,
        body=seed.body,
        slug=slugify(seed.headline)[:200],
        status=Status.PUBLISHED,
        published_at=noon_utc(seed.date),
    )
    changed |= _sync_citations(digest, seed)
    changed |= _sync_rows(
        digest.action_items,
        [
            {"text": text, "repository": _repository(repo, topic), "priority": priority}
            for text, repo, priority in seed.action_items
        ],
    )
    changed |= _sync_rows(digest.faq_entries, [{"question": q, "answer": a} for q, a in seed.faq])
    return digest, "created" if created else ("updated" if changed else "unchanged")


def _sync_citations(digest: Digest, seed: SeedDigest) -> bool:
    changed = False
    for item in seed.references:
        reference, outcome = _import_reference(item, digest.topic, seed.date)
        changed |= outcome != "unchanged"
        citation = DigestReference.objects.filter(digest=digest, number=item.number).first()
        if citation is None:
            DigestReference.objects.create(digest=digest, reference=reference, number=item.number)
            changed = True
        else:
            changed |= sync_fields(citation, reference=reference)
    numbers = [item.number for item in seed.references]
    deleted, _ = digest.digest_references.exclude(number__in=numbers).delete()
    return changed or bool(deleted)


def _sync_rows(related_manager, rows: list[dict]) -> bool:
    """Make an ordered child collection (action items, FAQ) equal `rows`, position by position."""
    changed = False
    for position, values in enumerate(rows, start=1):
        row = related_manager.filter(position=position).first()
        if row is None:
            related_manager.create(position=position, **values)
            changed = True
        else:
            changed |= sync_fields(row, **values)
    deleted, _ = related_manager.filter(position__gt=len(rows)).delete()
    return changed or bool(deleted)
