"""The generated text of a draft digest: a starting point that names what shipped.

Titles come from strangers; in Markdown (summary, body) their markup characters
are escaped so a title like "[1] fix" cannot pose as a citation, and the
rendered HTML is sanitised on save anyway.
"""
import fnmatch
import re

from django.conf import settings
from django.utils.formats import date_format
from django.utils.text import Truncator

from digests.models import ActionItem, Reference

MARKDOWN_SPECIAL = re.compile(r"([\\`*_\[\]<>#|!])")
PRIORITY_RANK = {ActionItem.Priority.IMMEDIATE: 0, ActionItem.Priority.PLAN: 1, ActionItem.Priority.MONITOR: 2}
HEADLINE_REPOS = 2


MARKDOWN_ESCAPED = re.compile(r"\\([\\`*_\[\]<>#|!])")


def md_escape(text: str) -> str:
    return MARKDOWN_SPECIAL.sub(r"\\\1", " ".join((text or "").split()))


def md_unescape(text: str) -> str:
    """Undo :func:`md_escape`, for plain-text places such as FAQ answers."""
    return MARKDOWN_ESCAPED.sub(r"\1", text)


def _plural(count: int, word: str, plural: str = "") -> str:
    return f"{count} {word if count == 1 else plural or word + 's'}"


def _leads(citations) -> list:
    """The first citation of each repository, preferring pull requests, in citation order."""
    leads: dict[int, object] = {}
    for kind in (Reference.Kind.PULL_REQUEST, Reference.Kind.COMMIT):
        for citation in citations:
            if citation.reference.kind == kind:
                leads.setdefault(citation.reference.repository_id, citation)
    return sorted(leads.values(), key=lambda citation: citation.number)


def _repositories(citations) -> list:
    return list({c.reference.repository_id: c.reference.repository for c in citations}.values())


def headline(citations) -> str:
    leads = _leads(citations)
    parts = [f"{c.reference.repository.name} ships {c.reference.title}" for c in leads[:HEADLINE_REPOS]]
    more = len(_repositories(citations)) - len(parts)
    if more > 0:
        parts[-1] += f", and news from {_plural(more, 'more repository', 'more repositories')}"
    text = "; ".join(parts)
    return Truncator(text or "Nothing shipped").chars(300)


def summary(topic, day, citations) -> str:
    kinds = [c.reference.kind for c in citations]
    pulls, commits = kinds.count(Reference.Kind.PULL_REQUEST), kinds.count(Reference.Kind.COMMIT)
    repositories = _repositories(citations)
    lead = (f"On {date_format(day, 'F j, Y')}, {topic.name} merged {_plural(pulls, 'pull request')} and landed "
            f"{_plural(commits, 'commit')} in {_plural(len(repositories), 'repository', 'repositories')}.")
    highlights = [f"{c.reference.repository.full_name} shipped {md_escape(c.reference.title)} [{c.number}]"
                  for c in _leads(citations)]
    return f"{lead} {'; '.join(highlights)}." if highlights else lead


def _line(citation) -> str:
    reference = citation.reference
    by = f" by @{md_escape(reference.author_login)}" if reference.author_login else ""
    what = f"#{reference.number}" if reference.kind == Reference.Kind.PULL_REQUEST else f"`{reference.sha[:10]}`"
    return f"- {md_escape(reference.display_title)} ({what}{by}) [{citation.number}]"


def body(citations) -> str:
    sections = []
    for repository in _repositories(citations):
        lines = [_line(c) for c in citations if c.reference.repository_id == repository.pk]
        sections.append(f"### {repository.full_name}\n\n" + "\n".join(lines))
    shipped = ", ".join(repository.full_name for repository in _repositories(citations))
    return "\n\n".join([f"**Which repositories shipped:** {shipped}", *sections])


def label_priority(label: str) -> str | None:
    """The priority of the first configured pattern matching ``label`` (case-insensitive)."""
    for pattern, priority in settings.INGESTION_LABEL_PRIORITIES:
        if fnmatch.fnmatchcase(label.lower(), pattern.lower()):
            return priority
    return None


def action_items(citations) -> list[list]:
    """One suggested action per labelled reference, at the most urgent priority its labels map to."""
    items = []
    for citation in citations:
        reference = citation.reference
        matches = [(label_priority(label), label) for label in reference.labels or []]
        matches = sorted((m for m in matches if m[0]), key=lambda m: PRIORITY_RANK[m[0]])
        if matches:
            priority, label = matches[0]
            text = f"Review “{reference.title}” ({reference.repository.full_name}, labelled “{label}”)"
            items.append([text, reference.repository_id, priority])
    return sorted(items, key=lambda item: PRIORITY_RANK[item[2]])
