"""Markdown to safe HTML, done once when content is saved.

Much of what we render was written by strangers (pull-request bodies, commit
messages, feed entries), so the HTML markdown-it produces -- raw HTML included,
because GitHub bodies use it -- always passes through nh3's allow-list before it
is stored. Nothing else in the project emits user text with ``|safe``.
"""
import html
import re
import secrets

import cmarkgfm
import nh3
from cmarkgfm.cmark import Options as CmarkOptions
from markdown_it import MarkdownIt
from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexers import get_lexer_by_name
from pygments.util import ClassNotFound

from .image_refs import IMAGE_SRC, place_images, register_image_renderer, render_image  # noqa: F401 (the API)
from .image_refs import render_image_token as _render_image


ALLOWED_TAGS = {
    "a", "abbr", "b", "blockquote", "br", "code", "dd", "del", "details", "div", "dl", "dt",
    "em", "h1", "h2", "h3", "h4", "h5", "h6", "hr", "i", "img", "ins", "kbd", "li", "ol", "p",
    "pre", "s", "span", "strong", "sub", "summary", "sup", "table", "tbody", "td", "th",
    "thead", "tr", "ul",
}
ALLOWED_ATTRIBUTES = {
    "a": {"href", "title", "id", "class"},
    "img": {"src", "alt", "title", "width", "height"},
    "code": {"class"},
    "div": {"class"},
    "pre": {"class"},
    "span": {"class"},
    "td": {"align"},
    "th": {"align"},
    "sup": {"id"},
    "li": {"id"},
}
ALLOWED_URL_SCHEMES = {"http", "https", "mailto"}


def _highlight_code(code: str, lang: str, _attrs) -> str:
    """Highlight a fenced block with Pygments; unknown languages are shown escaped as-is."""
    try:
        lexer = get_lexer_by_name(lang.strip()) if lang.strip() else None
    except ClassNotFound:
        lexer = None
    if lexer is None:
        return ""  # markdown-it then escapes the code itself
    return highlight(code, lexer, HtmlFormatter(nowrap=True))


#: A numbered citation in digest text: ``[3]`` or ``[ref:3]`` (not a ``[text](url)`` link).
CITATION_RE = re.compile(r"\[(?:ref:)?(\d{1,4})\](?!\()")


def _citation_rule(state, silent: bool) -> bool:
    """Inline rule: ``[3]`` or ``[ref:3]`` becomes a link to reference number 3.

    It runs before markdown-it's link rule, so ``[text](url)`` links and code
    spans are untouched; only bare numbered brackets are citations.
    """
    match = CITATION_RE.match(state.src, state.pos)
    if match is None:
        return False
    if not silent:
        token = state.push("citation", "", 0)
        token.meta = {"number": int(match.group(1))}
    state.pos = match.end()
    return True


def citation_link(number: int) -> str:
    return f'<a class="citation" href="#ref-{number}">[{number}]</a>'


def _render_citation(self, tokens, idx, options, env) -> str:
    return citation_link(tokens[idx].meta["number"])


def plain_citation_numbers(text: str) -> list[int]:
    """The citation numbers in plain text (an FAQ answer, not Markdown), in order, repeats included."""
    return [int(number) for number in CITATION_RE.findall(text or "")]


def link_citations(text: str) -> str:
    """Plain text (an FAQ answer) as escaped HTML whose citations link exactly like the body's."""
    linked = CITATION_RE.sub(lambda match: citation_link(int(match.group(1))), html.escape(text or "", quote=False))
    return sanitize_html(linked)  # the same allow-list pass, so the links read as the body's do


def _build(citations: bool) -> MarkdownIt:
    md = MarkdownIt("commonmark", {"html": True, "highlight": _highlight_code}).enable(["table", "strikethrough"])
    md.add_render_rule("image", _render_image)
    if citations:
        md.inline.ruler.before("link", "citation", _citation_rule)
        md.add_render_rule("citation", _render_citation)
    return md


_markdown = _build(citations=False)
_markdown_with_citations = _build(citations=True)


def citation_numbers(text: str) -> list[int]:
    """The citation numbers readers will see as links in `text`, in order, repeats included.

    Parsing with the renderer itself means code spans, fenced code and escaped
    brackets are never counted: the citation check and the page cannot disagree.
    """
    return [
        token.meta["number"]
        for block in _markdown_with_citations.parse(text or "")
        for token in block.children or ()
        if token.type == "citation"
    ]


def image_ids(text: str) -> list[int]:
    """The ids of the stored images `text` shows (``![alt](image:ID)``), in order, repeats included: what a
    page records as its images (parsed by the renderer itself, so code spans never count)."""
    found = []
    for block in _markdown.parse(text or ""):
        for token in block.children or ():
            match = IMAGE_SRC.fullmatch(token.attrGet("src") or "") if token.type == "image" else None
            if match:
                found.append(int(match.group(1)))
    return found


def sanitize_html(html: str) -> str:
    """Reduce arbitrary HTML to the allow-list: no scripts, handlers, frames or unsafe URLs."""
    return nh3.clean(
        html,
        tags=ALLOWED_TAGS,
        attributes=ALLOWED_ATTRIBUTES,
        url_schemes=ALLOWED_URL_SCHEMES,
        link_rel="nofollow noopener noreferrer",
    )


def render_markdown(text: str, *, citations: bool = False, images: bool = False, eager: int = 0) -> str:
    """Render CommonMark (+ tables, fenced code) and sanitise the result.

    With ``citations=True`` numbered citations link to ``#ref-N`` anchors. With ``images=True``
    (text our editors wrote: post and digest bodies) ``![alt](image:ID)`` shows a stored image
    (``place_images``); the first `eager` of them load at once, the rest lazily.
    """
    renderer = _markdown_with_citations if citations else _markdown
    env = {"images": [], "marker": f"rjimage{secrets.token_hex(8)}n"} if images else {}
    rendered = sanitize_html(renderer.render(text or "", env))
    return place_images(rendered, env, eager) if images else rendered


#: What ``render_markdown`` supports beyond CommonMark; raw HTML passes to nh3, as with markdown-it's ``html``.
GITHUB_EXTENSIONS = ["table", "strikethrough"]


def render_github_markdown(text: str) -> str:
    """Markdown written on GitHub (pull requests, issues, commits, releases) to safe HTML, ~3x faster.

    A poll imports these by the thousand, and markdown-it-py (pure Python) was
    the largest cost of storing one. cmark-gfm -- GitHub's own C renderer, as
    PyPI's readme_renderer uses it -- parses the same CommonMark with the same
    two extensions, and its output goes through the same nh3 allow-list as
    ``render_markdown``'s, so what may reach a page is exactly as strict. The
    HTML differs only where GitHub's flavour does: table alignment is kept
    (``align``), strikethrough is ``<del>`` and takes one tilde too, and a
    link to a refused scheme keeps its text as a link without ``href``. A
    fenced block naming a language would lose its Pygments highlighting, so
    such a body is rendered by ``render_markdown`` instead.
    """
    html = cmarkgfm.markdown_to_html_with_extensions(
        text or "", options=CmarkOptions.CMARK_OPT_UNSAFE, extensions=GITHUB_EXTENSIONS
    )
    if '<code class="language-' in html:
        return render_markdown(text)
    return sanitize_html(html)


#: Search engines show about this many characters of a page's description.
DESCRIPTION_CHARS = 160


def plain_text(fragment: str) -> str:
    """Safe HTML as the plain text a reader sees: tags dropped by nh3 (script and style content with
    them), entities decoded once (templates escape the result again), whitespace collapsed."""
    return " ".join(html.unescape(nh3.clean(fragment or "", tags=set())).split())


def cut_at_word(text: str, limit: int = DESCRIPTION_CHARS) -> str:
    """`text` if it fits in `limit` characters, else its longest run of whole words that does, then "…"."""
    if len(text) <= limit:
        return text
    cut = text[:limit]
    if not text[limit].isspace() and " " in cut:
        cut = cut.rsplit(" ", 1)[0]
    return cut.rstrip(" ,;:.-–—") + "…"


def describe(markdown: str, *, limit: int = DESCRIPTION_CHARS) -> str:
    """A page's ``<meta name="description">`` from its Markdown: rendered, plain text, cut at a word."""
    return cut_at_word(plain_text(render_markdown(markdown)), limit)
