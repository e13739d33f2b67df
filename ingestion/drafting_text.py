"""The generated text of a draft digest, in plain words, from changes ranked by significance.

The target shape is the published seed digests (demo/seeds/000_*, 001_*): a
headline naming the two or three most significant changes, one summary sentence
per repository with citations, a body grouped by repository and theme, and
action items from labels. Titles are cleaned for prose (``clean_title``); the
reference list keeps them as GitHub gave them.

Titles come from strangers; in Markdown (summary, body) their markup characters
are escaped so a title like "[1] fix" cannot pose as a citation, and the
rendered HTML is sanitised on save anyway.
"""
import re

from django.utils.text import Truncator

from digests.models import ActionItem

from .drafting_changes import OTHER, PRIORITY_RANK, Change, by_repository, ranked
from .drafting_words import third_person

MARKDOWN_SPECIAL = re.compile(r"([\\`*_\[\]<>#|!])")
MARKDOWN_ESCAPED = re.compile(r"\\([\\`*_\[\]<>#|!])")
TRAILING_ASIDE = re.compile(r"\s*\([^()]*\)$")
HEADLINE_CHANGES = 3
SUMMARY_CHANGES = 3
MAX_ACTIONS = 5
HEADLINE_MAX = 300
ACTION_TEXT = {
    ActionItem.Priority.IMMEDIATE: "Check whether “{title}” affects you before upgrading (labelled “{label}”)",
    ActionItem.Priority.PLAN: "Plan for “{title}” (labelled “{label}”)",
    ActionItem.Priority.MONITOR: "Keep an eye on “{title}” (labelled “{label}”)",
}


def md_escape(text: str) -> str:
    return MARKDOWN_SPECIAL.sub(r"\\\1", " ".join((text or "").split()))


def md_unescape(text: str) -> str:
    """Undo :func:`md_escape`, for plain-text places such as FAQ answers."""
    return MARKDOWN_ESCAPED.sub(r"\1", text)


def _plural(count: int, word: str, plural: str = "") -> str:
    return f"{count} {word if count == 1 else plural or word + 's'}"


def _cites(change: Change) -> str:
    return "".join(f"[{number}]" for number in change.numbers)


def _and(parts: list[str]) -> str:
    return parts[0] if len(parts) == 1 else f"{', '.join(parts[:-1])} and {parts[-1]}"


def _headline_picks(changes: list[Change]) -> list[Change]:
    """The most significant changes, one per repository first, then the next most significant."""
    order = ranked(changes)
    picks: list[Change] = []
    for change in order:
        if all(pick.reference.repository_id != change.reference.repository_id for pick in picks):
            picks.append(change)
    picks = picks[:HEADLINE_CHANGES]
    picks += [change for change in order if change not in picks][:HEADLINE_CHANGES - len(picks)]
    return [change for change in order if change in picks]


def _headline_text(picks: list[Change]) -> str:
    per_repository: dict[int, list[Change]] = {}
    for change in picks:
        per_repository.setdefault(change.reference.repository_id, []).append(change)
    clauses = [
        f"{group[0].reference.repository.name} "
        + _and([third_person(TRAILING_ASIDE.sub("", change.title) or change.title) for change in group])
        for group in per_repository.values()
    ]
    text = "; ".join(clauses)
    return text[:1].upper() + text[1:]


def headline(changes: list[Change]) -> str:
    """The two or three most significant changes in plain words, within the headline's 300 characters."""
    picks = _headline_picks(changes)
    for count in range(len(picks), 0, -1):
        text = _headline_text(picks[:count])
        if len(text) <= HEADLINE_MAX:
            return text
    return Truncator(_headline_text(picks[:1]) if picks else "Nothing shipped").chars(HEADLINE_MAX)


def _repository_sentence(repository, changes: list[Change]) -> str:
    named = [f"{md_escape(third_person(change.title))} {_cites(change)}" for change in changes[:SUMMARY_CHANGES]]
    rest = len(changes) - len(named)
    if rest:
        named.append(f"{_plural(rest, 'more change')}")
    return f"{md_escape(repository.full_name)} {_and(named)}."


def summary(changes: list[Change]) -> str:
    """One sentence per repository, its most significant changes first, each with its citations."""
    return " ".join(_repository_sentence(repository, group) for repository, group in by_repository(changes))


def _details(change: Change) -> str:
    reference, parts = change.reference, []
    if reference.kind == "pull_request" and reference.number:
        parts.append(f"#{reference.number}")
    sha = next((c.reference.sha for c in change.citations if c.reference.sha), "")  # a PR's is its merge commit
    if sha:
        parts.append(f"`{sha[:10]}`")
    if reference.author_login:
        parts.append(f"by @{md_escape(reference.author_login)}")
    stats = reference.stats or {}
    if "additions" in stats or "deletions" in stats:
        files = stats.get("changed_files")
        size = f"+{stats.get('additions', 0)} −{stats.get('deletions', 0)}"
        parts.append(f"{size} in {_plural(files, 'file')}" if files else size)
    matched = change.priority()
    if matched:
        parts.append(f"labelled “{md_escape(matched[1])}”")
    return f" ({', '.join(parts)})" if parts else ""


def _sentence_case(title: str) -> str:
    """"evolve qwen3_vl" -> "Evolve qwen3_vl"; identifiers such as "torch.compile ..." are left alone."""
    first = title.split(" ", 1)[0]
    return title[:1].upper() + title[1:] if first.isalpha() and first.islower() else title


def _themed(changes: list[Change]) -> list[str]:
    themes: dict[str, list[Change]] = {}
    for change in changes:
        themes.setdefault(change.theme, []).append(change)
    if OTHER in themes:  # the unthemed changes come last
        themes[OTHER] = themes.pop(OTHER)
    lines = []
    for name, group in themes.items():
        if len(themes) > 1 or name != OTHER:
            lines.append(f"\n#### {md_escape(name)}\n")
        lines += [f"- {md_escape(_sentence_case(change.title))}{_details(change)} {_cites(change)}" for change in group]
    return lines


def body(changes: list[Change]) -> str:
    """Every change, grouped by repository and theme, most significant first, each cited."""
    groups = by_repository(changes)
    count = ", ".join(f"{md_escape(repository.full_name)} ({len(group)})" for repository, group in groups)
    sections = [f"**{_plural(len(changes), 'change')} in {_plural(len(groups), 'repository', 'repositories')}:** "
                f"{count}."]
    for repository, group in groups:
        sections.append(f"### {md_escape(repository.full_name)}\n" + "\n".join(_themed(group)).rstrip())
    return "\n\n".join(section.replace("\n\n\n", "\n\n") for section in sections)


def action_items(changes: list[Change]) -> list[list]:
    """One suggested action per labelled change, most urgent and most significant first, at most five."""
    items = []
    for change in ranked(changes):
        matched = change.priority()
        if matched:
            priority, label = matched
            text = ACTION_TEXT[priority].format(title=change.title, label=label)
            items.append((PRIORITY_RANK[priority], [text, change.reference.repository_id, priority]))
    return [item for _rank, item in sorted(items, key=lambda pair: pair[0])][:MAX_ACTIONS]
