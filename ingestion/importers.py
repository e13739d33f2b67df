"""GitHub objects -> References, as re-runnable upserts on natural keys.

Webhook payloads and REST responses describe pull requests, commits, releases
and issues in (almost) the same JSON, so both paths end here. Every function
upserts on (repository, kind, key) and reports "created", "updated" or
"unchanged", which callers add up in :class:`Counts`: importing the same data
twice changes nothing the second time.

A webhook brings one item: ``upsert_pull_request`` and friends go through
``Reference.objects.upsert`` row by row. A poll brings pages of up to 100:
``upsert_page`` and its ``upsert_pull_requests``/``upsert_commits``/
``upsert_releases`` give the same outcomes in a fixed number of queries per page
(``Reference.objects.upsert_many``), which is what makes a backfill fast.
"""
import re
from dataclasses import dataclass

from django.db import IntegrityError, transaction
from django.utils.dateparse import parse_datetime

from digests.models import Digest, Reference
from publishing.signals import announce_bulk_write

from .models import ReferenceSyncState

CO_AUTHOR_RE = re.compile(r"^\s*co-authored-by:\s*(.+?)\s*$", re.IGNORECASE | re.MULTILINE)
EMAIL_RE = re.compile(r"\s*<[^>]*>\s*$")
PR_NUMBER_RE = re.compile(r"\(#(\d+)\)\s*$")
TITLE_MAX = 500


@dataclass
class Counts:
    """How many upserts created, updated or left rows unchanged."""

    created: int = 0
    updated: int = 0
    unchanged: int = 0

    def add(self, outcome: str) -> None:
        setattr(self, outcome, getattr(self, outcome) + 1)

    def merge(self, other: "Counts") -> None:
        for name in ("created", "updated", "unchanged"):
            setattr(self, name, getattr(self, name) + getattr(other, name))

    def as_dict(self) -> dict[str, int]:
        return {"created": self.created, "updated": self.updated, "unchanged": self.unchanged}

    def __str__(self) -> str:
        return f"{self.created} created, {self.updated} updated, {self.unchanged} unchanged"


def co_authors(message: str) -> list[str]:
    """Names from ``Co-authored-by: Name <email>`` trailers, in order, each once."""
    names = (EMAIL_RE.sub("", match) for match in CO_AUTHOR_RE.findall(message or ""))
    return list(dict.fromkeys(name for name in names if name))


def _when(value: str | None):
    return parse_datetime(value) if value else None


def _login(user: dict | None) -> str:
    return (user or {}).get("login") or ""


def _labels(item: dict) -> list[str]:
    return [label["name"] for label in item.get("labels") or []]


def is_merged(pull: dict) -> bool:
    """Merged only if GitHub says so: ``merge_commit_sha`` is set on unmerged PRs too."""
    return bool(pull.get("merged") or pull.get("merged_at"))


STAT_COUNTS = ("additions", "deletions", "changed_files", "review_comments", "comments")


def pull_request_stats(pull: dict) -> dict | None:
    """Size and attention as GitHub gives them, or None when this JSON has none.

    A single pull request (webhook, ``GET /pulls/{n}``) carries additions,
    deletions, changed_files and comment counts; a ``GET /pulls`` list item does
    not, and must not wipe what a webhook stored. Reviewers are the people asked
    to review; reactions come only where GitHub includes them.
    """
    if not any(name in pull for name in STAT_COUNTS):
        return None
    stats = {name: pull[name] for name in STAT_COUNTS if isinstance(pull.get(name), int)}
    stats["reviewers"] = len(pull.get("requested_reviewers") or []) + len(pull.get("requested_teams") or [])
    reactions = (pull.get("reactions") or {}).get("total_count")
    if isinstance(reactions, int):
        stats["reactions"] = reactions
    return stats


def pull_request_fields(pull: dict) -> dict:
    merged = is_merged(pull)
    body = pull.get("body") or ""
    stats = pull_request_stats(pull)
    return ({"stats": stats} if stats is not None else {}) | {
        "number": pull["number"],
        "title": pull["title"][:TITLE_MAX],
        "url": pull.get("html_url") or "",
        "author_login": _login(pull.get("user")),
        "co_authors": co_authors(body),
        "state": "merged" if merged else pull.get("state", ""),
        "merged_at": _when(pull.get("merged_at")) if merged else None,
        "sha": (pull.get("merge_commit_sha") or "") if merged else "",
        "labels": _labels(pull),
        "body": body,
        "opened_at": _when(pull.get("created_at")),
    }


def issue_fields(issue: dict) -> dict:
    body = issue.get("body") or ""
    return {
        "number": issue["number"],
        "title": issue["title"][:TITLE_MAX],
        "url": issue.get("html_url") or "",
        "author_login": _login(issue.get("user")),
        "co_authors": co_authors(body),
        "state": issue.get("state", ""),
        "labels": _labels(issue),
        "body": body,
        "opened_at": _when(issue.get("created_at")),
    }


def release_fields(release: dict) -> dict:
    return {
        "title": (release.get("name") or release["tag_name"])[:TITLE_MAX],
        "url": release.get("html_url") or "",
        "author_login": _login(release.get("author")),
        "state": "prerelease" if release.get("prerelease") else "published",
        "body": release.get("body") or "",
        "opened_at": _when(release.get("published_at")),
    }


def commit_fields(sha: str, message: str, url: str, login: str, when: str | None) -> dict:
    """A commit on the default branch: landed at ``when``; "(#123)" names the PR it came from."""
    title, _, rest = (message or "").partition("\n")
    number = PR_NUMBER_RE.search(title)
    landed = _when(when)
    return {
        "sha": sha,
        "number": int(number.group(1)) if number else None,
        "title": title.strip()[:TITLE_MAX] or sha[:10],
        "url": url,
        "author_login": login,
        "co_authors": co_authors(message),
        "body": rest.strip(),
        "opened_at": landed,
        "merged_at": landed,
    }


def push_commit_fields(commit: dict) -> dict:
    """A commit as a ``push`` webhook lists it."""
    author = commit.get("author") or {}
    return commit_fields(commit["id"], commit["message"], commit.get("url", ""), author.get("username") or "",
                         commit.get("timestamp"))


def rest_commit_fields(commit: dict) -> dict:
    """A commit as ``GET /repos/{owner}/{repo}/commits`` lists it."""
    detail = commit["commit"]
    return commit_fields(commit["sha"], detail["message"], commit.get("html_url", ""), _login(commit.get("author")),
                         (detail.get("committer") or detail.get("author") or {}).get("date"))


def _is_stale(reference: Reference, fields: dict, github_updated_at) -> bool:
    """True if ``fields`` describe an older version than the one stored.

    A merge is final, and a version GitHub last updated before the stored one
    is out of date: either way the stored reference is kept.
    """
    if reference.state == "merged" and fields.get("state") != "merged":
        return True
    state = getattr(reference, "sync_state", None)
    return bool(state and github_updated_at and github_updated_at < state.github_updated_at)


def race_safe(upsert, *args, **kwargs):
    """Run an upsert in a savepoint; if another writer created the same key meanwhile, run it once more.

    GitHub sends a pull request's events in bursts (opened, labeled, synchronize ...), and two
    workers processing two of them both found no row and both inserted: the second failed
    with an IntegrityError and waited for a retry (issue 25's fault run). The second run
    finds the row the first one created and is judged against it (a versioned upsert
    re-checks which version is newer), exactly as if the deliveries had come one by one.
    """
    try:
        with transaction.atomic():
            return upsert(*args, **kwargs)
    except IntegrityError:
        return upsert(*args, **kwargs)


def _upsert_versioned(repository, kind: str, key: str, fields: dict, updated_at: str | None) -> str:
    return race_safe(_upsert_versioned_once, repository, kind, key, fields, updated_at)


def _upsert_versioned_once(repository, kind: str, key: str, fields: dict, updated_at: str | None) -> str:
    """Upsert unless what we hold is newer; remember GitHub's ``updated_at`` of what we stored."""
    github_updated_at = _when(updated_at)
    existing = Reference.objects.filter(repository=repository, kind=kind, key=key).select_related("sync_state").first()
    if existing is not None and _is_stale(existing, fields, github_updated_at):
        return "unchanged"
    reference, outcome = Reference.objects.upsert(repository, kind, key, **fields)
    if github_updated_at is not None:
        ReferenceSyncState.objects.update_or_create(
            reference=reference, defaults={"github_updated_at": github_updated_at}
        )
    return outcome


def upsert_pull_request(repository, pull: dict) -> str:
    return _upsert_versioned(
        repository, Reference.Kind.PULL_REQUEST, str(pull["number"]), pull_request_fields(pull), pull.get("updated_at")
    )


def upsert_issue(repository, issue: dict) -> str:
    return _upsert_versioned(
        repository, Reference.Kind.ISSUE, str(issue["number"]), issue_fields(issue), issue.get("updated_at")
    )


def upsert_release(repository, release: dict) -> str:
    return race_safe(Reference.objects.upsert, repository, Reference.Kind.RELEASE, release["tag_name"],
                     **release_fields(release))[1]


def upsert_commit(repository, fields: dict) -> str:
    return race_safe(Reference.objects.upsert, repository, Reference.Kind.COMMIT, fields["sha"], **fields)[1]


# Pages ---------------------------------------------------------------------------------------

Item = tuple[str, dict, str | None]  # (key, fields, GitHub's updated_at for versioned kinds)


def upsert_pull_requests(repository, pulls: list[dict]) -> Counts:
    """A page of ``GET /pulls``: what ``upsert_pull_request`` does for each, in a fixed number of queries."""
    items = [(str(pull["number"]), pull_request_fields(pull), pull.get("updated_at")) for pull in pulls]
    return upsert_page(repository, Reference.Kind.PULL_REQUEST, items, versioned=True)


def upsert_commits(repository, commits: list[dict]) -> Counts:
    """A page of commits given as ``commit_fields`` dicts (see ``rest_commit_fields``)."""
    return upsert_page(repository, Reference.Kind.COMMIT, [(fields["sha"], fields, None) for fields in commits])


def upsert_releases(repository, releases: list[dict]) -> Counts:
    items = [(release["tag_name"], release_fields(release), None) for release in releases]
    return upsert_page(repository, Reference.Kind.RELEASE, items)


def upsert_page(repository, kind: str, items: list[Item], *, versioned: bool = False) -> Counts:
    """Upsert one page with the same outcomes as the per-item functions, in a fixed number of queries.

    A key listed twice (the item changed while we paged) goes into a second
    round, so the later copy is judged against the earlier one exactly as row
    by row. If another writer (a webhook) inserts one of the keys between our
    SELECT and INSERT, that round is redone row by row. Bulk writes send no
    signals, so the page cache is invalidated here when anything was written.
    """
    counts = Counts()
    for batch in _rounds(items):
        try:
            with transaction.atomic():
                outcomes = _upsert_round(repository, kind, batch, versioned)
        except IntegrityError:
            outcomes = [_upsert_one(repository, kind, item, versioned) for item in batch.values()]
        for outcome in outcomes:
            counts.add(outcome)
    if counts.updated:  # a cited reference's title or URL shows on its digests' stored pages
        Digest.objects.citing_keys(repository, kind, [item[0] for item in items]).refresh_rendered()
    if counts.created or counts.updated:
        written = Reference.objects.filter(repository=repository, kind=kind, key__in=[item[0] for item in items])
        announce_bulk_write(Reference, written.values("pk"))
    return counts


def _rounds(items: list[Item]) -> list[dict[str, Item]]:
    """Split items so that each round holds a key at most once, keeping each key's order."""
    rounds: list[dict[str, Item]] = []
    for item in items:
        batch = next((batch for batch in rounds if item[0] not in batch), None)
        if batch is None:
            rounds.append(batch := {})
        batch[item[0]] = item
    return rounds


def _upsert_round(repository, kind: str, batch: dict[str, Item], versioned: bool) -> list[str]:
    rows = {key: fields for key, (_key, fields, _updated_at) in batch.items()}
    if not versioned:
        results = Reference.objects.upsert_many(repository, kind, rows)
        return [outcome for _reference, outcome in results.values()]
    github = {key: _when(updated_at) for key, (_key, _fields, updated_at) in batch.items()}
    results = Reference.objects.select_related("sync_state").upsert_many(
        repository, kind, rows, skip=lambda reference, fields: _is_stale(reference, fields, github[reference.key])
    )
    _remember_versions(results, github)
    return ["unchanged" if outcome == "skipped" else outcome for _reference, outcome in results.values()]


def _remember_versions(results: dict, github: dict) -> None:
    """One write for the page: GitHub's ``updated_at`` of every version stored or confirmed (not of stale ones)."""
    states = []
    for key, (reference, outcome) in results.items():
        stored = None if outcome == "created" else getattr(reference, "sync_state", None)
        if outcome != "skipped" and github[key] and (stored is None or stored.github_updated_at != github[key]):
            states.append(ReferenceSyncState(reference=reference, github_updated_at=github[key]))
    if states:
        ReferenceSyncState.objects.bulk_create(
            states, update_conflicts=True, unique_fields=["reference"], update_fields=["github_updated_at"]
        )


def _upsert_one(repository, kind: str, item: Item, versioned: bool) -> str:
    key, fields, updated_at = item
    if versioned:
        return _upsert_versioned(repository, kind, key, fields, updated_at)
    return race_safe(Reference.objects.upsert, repository, kind, key, **fields)[1]
