"""What changed on a day, as an editor counts it: changes, ranked by significance, each with a theme.

A pull request and the commit that merged it are one change (GitHub gives the
PR's ``merge_commit_sha``, stored as its ``sha``, and the squash commit's title
ends in "(#123)", stored as its ``number``); the change is cited by the PR.
Significance is computed only from what GitHub gives us -- labels, size,
reactions, reviewers -- with the weights below (documented in
docs/operations.md, "How drafting ranks changes").
"""
import fnmatch
import math
import re
from dataclasses import dataclass, field

from django.conf import settings

from digests.models import ActionItem, Reference

#: (label pattern, points); each label scores by its first matching pattern, case-insensitively.
LABEL_POINTS = [
    ("security", 40), ("*bc*breaking*", 40), ("breaking*", 40), ("*deprecat*", 20),
    ("release notes: *", 10), ("feature", 10), ("enhancement", 10),
]
LABEL_CAP = 60
PULL_REQUEST_POINTS = 5  # reviewed on GitHub, unlike a bare commit
PRIORITY_RANK = {ActionItem.Priority.IMMEDIATE: 0, ActionItem.Priority.PLAN: 1, ActionItem.Priority.MONITOR: 2}

TAG_PREFIX = re.compile(r"^\s*(?:\[[^\]\n]*\]\s*)+")
TAG = re.compile(r"\[([^\]\n]+)\]")
PR_SUFFIX = re.compile(r"\s*\(#\d+\)\s*$")
CONVENTIONAL = re.compile(r"^(?P<type>[a-z]+)(?:\([^)]*\))?!?:\s+", re.IGNORECASE)
EMPTY_PARENS = re.compile(r"\(\s*\)|\[\s*\]")
LABEL_THEME = re.compile(r"^(?:release notes|module|topic|area):\s*(?P<theme>.+)$", re.IGNORECASE)
CONVENTIONAL_THEMES = {
    "feat": "Features", "fix": "Fixes", "perf": "Performance", "docs": "Documentation", "test": "Tests",
    "refactor": "Maintenance", "chore": "Maintenance", "build": "Build", "ci": "Build",
}
NO_THEME = {"none", "skip", "not user facing", "untopiced"}
OTHER = "Other changes"


def clean_title(title: str) -> str:
    """A title for prose: no "[Tag]" prefixes, "(#123)" suffix, "feat:" prefix, empty brackets or end stop."""
    text = PR_SUFFIX.sub("", title or "")
    text = CONVENTIONAL.sub("", TAG_PREFIX.sub("", text))
    text = " ".join(EMPTY_PARENS.sub("", text).split()).rstrip(" .;,:")
    return text or " ".join((title or "").split())


def label_priority(label: str) -> str | None:
    """The priority of the first configured pattern matching ``label`` (case-insensitive)."""
    for pattern, priority in settings.INGESTION_LABEL_PRIORITIES:
        if fnmatch.fnmatchcase(label.lower(), pattern.lower()):
            return priority
    return None


def _label_points(labels: list[str]) -> int:
    points = 0
    for label in labels:
        points += next((p for pattern, p in LABEL_POINTS if fnmatch.fnmatchcase(label.lower(), pattern)), 0)
    return min(points, LABEL_CAP)


def significance(reference: Reference) -> int:
    """Points from labels, size (lines and files), reactions and reviewers; see docs/operations.md."""
    stats = reference.stats or {}
    lines = (stats.get("additions") or 0) + (stats.get("deletions") or 0)
    return (
        _label_points(reference.labels or [])
        + min(20, round(4 * math.log10(1 + lines)))
        + min(10, stats.get("changed_files") or 0)
        + min(10, 2 * (stats.get("reactions") or 0))
        + min(10, 3 * (stats.get("reviewers") or 0))
        + min(5, stats.get("review_comments") or 0)
        + (PULL_REQUEST_POINTS if reference.kind == Reference.Kind.PULL_REQUEST else 0)
    )


def theme(reference: Reference) -> str:
    """The section of its repository a change goes under: a title tag, a label's area, a commit type."""
    prefix = TAG_PREFIX.match(reference.title or "")
    tags = [tag.strip() for tag in TAG.findall(prefix[0])] if prefix else []
    tags = [tag for tag in tags if tag.lower() != reference.repository.name.lower()]
    if tags:
        return _display(tags[-1])
    for label in reference.labels or []:
        match = LABEL_THEME.match(label)
        if match and match["theme"].strip().lower() not in NO_THEME:
            return _display(match["theme"])
    conventional = CONVENTIONAL.match(PR_SUFFIX.sub("", reference.title or ""))
    if conventional and conventional["type"].lower() in CONVENTIONAL_THEMES:
        return CONVENTIONAL_THEMES[conventional["type"].lower()]
    return OTHER


def _display(name: str) -> str:
    """"rl" -> "RL", "inductor" -> "Inductor"; names with capitals of their own ("WebGPU") are kept."""
    name = " ".join(name.split())
    if name.islower() and len(name) <= 3:
        return name.upper()
    return name[:1].upper() + name[1:]


@dataclass
class Change:
    """One change: its lead reference (the pull request if there is one) and any commit that landed it."""

    citations: list = field(default_factory=list)

    @property
    def lead(self):
        return self.citations[0]

    @property
    def reference(self) -> Reference:
        return self.lead.reference

    @property
    def numbers(self) -> list[int]:
        return sorted(citation.number for citation in self.citations)

    @property
    def title(self) -> str:
        return clean_title(self.reference.title)

    @property
    def labels(self) -> list[str]:
        return list(dict.fromkeys(label for c in self.citations for label in c.reference.labels or []))

    @property
    def score(self) -> int:
        return significance(self.reference)

    @property
    def theme(self) -> str:
        return theme(self.reference)

    def priority(self) -> tuple[str, str] | None:
        """The most urgent (priority, label) its labels map to, if any."""
        matches = [(label_priority(label), label) for label in self.labels]
        matches = sorted((m for m in matches if m[0]), key=lambda m: PRIORITY_RANK[m[0]])
        return matches[0] if matches else None


def is_merge_commit_of(commit: Reference, pull: Reference) -> bool:
    """True if ``commit`` is how ``pull`` landed: its merge commit SHA, or a title ending in "(#number)"."""
    if commit.repository_id != pull.repository_id:
        return False
    return bool((pull.sha and commit.sha == pull.sha) or (pull.number and commit.number == pull.number))


def fold(citations) -> list["Change"]:
    """The citations folded into changes (each PR with its merge commit), in citation order of their leads."""
    pulls = [c for c in citations if c.reference.kind != Reference.Kind.COMMIT]
    changes = {c.number: Change([c]) for c in pulls}
    for citation in citations:
        if citation.reference.kind != Reference.Kind.COMMIT:
            continue
        landed = next((p for p in pulls if is_merge_commit_of(citation.reference, p.reference)), None)
        if landed is None:
            changes[citation.number] = Change([citation])
        else:
            changes[landed.number].citations.append(citation)
    return [changes[number] for number in sorted(changes)]


def without_merge_commits(references: list[Reference]) -> list[Reference]:
    """Drop the commits that merely landed one of these pull requests: the PR is cited for both."""
    pulls = [r for r in references if r.kind == Reference.Kind.PULL_REQUEST]
    return [r for r in references
            if r.kind != Reference.Kind.COMMIT or not any(is_merge_commit_of(r, pull) for pull in pulls)]


def ranked(changes: list[Change]) -> list[Change]:
    """Most significant first; ties keep citation order."""
    return sorted(changes, key=lambda change: (-change.score, change.lead.number))


def by_repository(changes: list[Change]) -> list[tuple[object, list[Change]]]:
    """Repositories with their changes ranked, the repository with the most significant change first."""
    groups: dict[int, list[Change]] = {}
    for change in ranked(changes):
        groups.setdefault(change.reference.repository_id, []).append(change)
    return [(group[0].reference.repository, group) for group in groups.values()]
