"""The preview beside a Markdown field in the admin: the text as readers will see it, while it is typed.

A preview that renders differently from the page misleads the editor, and one that renders
unsanitised text is an XSS hole in the admin, where staff sessions live. So there is no
preview renderer: a ``Markdown`` says which of the page's own calls renders its field --
``render_markdown`` with or without citations and images, or ``link_citations`` for the
plain text of an FAQ answer -- and the preview makes exactly that call. What the page
cites is listed under the text as the form stands (``Cited``, given by the content app:
publishing cannot read its references), and a number with no reference is said to be one.

The endpoint (``images.admin.ImagePickerMixin``) answers staff who may change the item.
"""
from collections.abc import Callable
from dataclasses import dataclass

from django.template.loader import render_to_string

from .rendering import citation_numbers, link_citations, plain_citation_numbers, render_markdown

#: The longest text previewed (characters): ten times a long post; beyond it the answer is a 413, not a wait.
MAX_CHARS = 200_000


class TooLong(ValueError):
    """A text longer than ``MAX_CHARS``; the message says so, for the editor."""


@dataclass(frozen=True)
class Cited:
    """A reference as the preview lists it under the text that cites it."""

    number: int
    title: str
    url: str
    source: str  # where it comes from, e.g. a repository's owner/name


#: Who gives a field's references: (request, the item being edited or None when adding) -> {number: Cited}.
References = Callable[..., dict[int, Cited]]


@dataclass(frozen=True)
class Markdown:
    """How the public page renders one field; the preview renders it the same way."""

    citations: bool = False  # [1] / [ref:1] link to the references
    images: bool = False  # ![alt](image:ID) shows a stored image (and files dropped in are uploaded)
    plain: bool = False  # plain text whose citations link (an FAQ answer), not Markdown
    references: References | None = None

    def render(self, text: str) -> str:
        """The page's HTML of `text`, sanitised by the page's own allow-list."""
        if len(text) > MAX_CHARS:
            raise TooLong(f"The text is {len(text):,} characters; the preview shows at most {MAX_CHARS:,}. "
                          f"Split it, or save and look at the page.")
        if self.plain:
            return link_citations(text)
        return render_markdown(text, citations=self.citations, images=self.images, eager=1)

    def cited_numbers(self, text: str) -> list[int]:
        """The numbers readers will see as citation links, each once, in order of first use."""
        if not self.citations and not self.plain:
            return []
        found = plain_citation_numbers(text) if self.plain else citation_numbers(text)
        return list(dict.fromkeys(found))


#: A blog post's body: Markdown with images.
BODY = Markdown(images=True)


def preview(markdown: Markdown, text: str, references: Callable[[], dict[int, Cited]] | None = None) -> str:
    """The text as the page shows it, then what it cites (``TooLong`` past ``MAX_CHARS``). `references`
    gives the references by number, asked for only when the text cites something."""
    html = markdown.render(text)
    numbers = markdown.cited_numbers(text)
    if not numbers:
        return html
    known = references() if references else {}
    cited = [(number, known.get(number)) for number in numbers]
    return html + render_to_string("admin/publishing/preview_citations.html", {"cited": cited})
