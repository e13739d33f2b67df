"""Numbered citations in digest text: ``[1]``, ``[ref:3]``.

A digest's summary and body (Markdown) and its FAQ answers (plain text) cite its
references by number. The same scanners back the save-time check (every cited
number must exist), the uncited-reference warning, and the rendering of citations
as links (``render_markdown(..., citations=True)``, ``link_citations``).
"""
from dataclasses import dataclass, field

from publishing.rendering import CITATION_RE, citation_numbers, plain_citation_numbers


def cited_numbers(*texts: str, plain: tuple[str, ...] = ()) -> list[int]:
    """Every number cited in the Markdown `texts` and the `plain` texts (FAQ answers), in order of
    first appearance, without repeats.

    Markdown is parsed by the same parser that renders it, so exactly what readers
    see as a citation link is checked: ``x[0]`` inside code or an escaped ``\\[2]``
    is not a citation and must not block saving. Plain text is scanned as
    ``link_citations`` renders it.
    """
    seen: dict[int, None] = {}
    for numbers in [*map(citation_numbers, texts), *map(plain_citation_numbers, plain)]:
        for number in numbers:
            seen.setdefault(number, None)
    return list(seen)


def strip_citations(text: str) -> str:
    """Remove citation markers, as the seed FAQ answers do ("operations , while")."""
    return CITATION_RE.sub("", text or "")


@dataclass
class CitationReport:
    """Cited numbers with no reference (an error) and references never cited (a warning)."""

    missing: list[int] = field(default_factory=list)
    uncited: list[int] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.missing

    def error_message(self) -> str:
        numbers = ", ".join(f"[{n}]" for n in self.missing)
        noun = "Citation" if len(self.missing) == 1 else "Citations"
        return f"{noun} {numbers} in the summary, body or FAQ {'has' if len(self.missing) == 1 else 'have'} no matching reference."

    def warning_message(self) -> str:
        numbers = ", ".join(f"[{n}]" for n in self.uncited)
        return f"Reference{'s' if len(self.uncited) > 1 else ''} {numbers} {'are' if len(self.uncited) > 1 else 'is'} never cited in the summary, body or FAQ."


def check_citations(texts: list[str], reference_numbers, plain: tuple[str, ...] = ()) -> CitationReport:
    """`texts` are Markdown (summary, body), `plain` plain text (FAQ answers)."""
    cited = cited_numbers(*texts, plain=tuple(plain))
    available = set(reference_numbers)
    return CitationReport(
        missing=[n for n in cited if n not in available],
        uncited=sorted(available.difference(cited)),
    )
