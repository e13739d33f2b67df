"""Stored page HTML made fit for an inbox, and its plain-text twin (both with ``html.parser``).

The input is HTML the site stored already sanitised (``publishing.rendering``, ``digests.cards``).
Rewriting re-emits it tag by tag, escaping every value again, and changes only what mail clients
cannot use: a relative link becomes absolute (there is no page to be relative to), a citation
``#ref-N`` points at its reference, and a ``<picture>`` becomes its fallback ``<img>`` at the
widest JPEG/PNG rendition no wider than EMAIL_WIDTH (mail clients ignore ``srcset``, and
``<source>`` AVIF/WebP would be lost on most of them).
"""
import html
import re
from html.parser import HTMLParser
from urllib.parse import urljoin, urlsplit

from django.conf import settings

#: The widest image an email shows: the usual width of an email's column.
EMAIL_WIDTH = 600
VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}
URL_ATTRIBUTES = {"href", "src"}
DROPPED_IMG_ATTRIBUTES = {"srcset", "sizes", "loading", "decoding"}
CITATION = re.compile(r"#ref-(\d+)$")
#: What a link or image may point at in an email (the stored HTML was sanitised to these already; a rewrite
#: must not be what lets another through).
SAFE_SCHEMES = {"http", "https", "mailto"}


def choose_rendition(srcset: str, src: str, width: int) -> tuple[str, int]:
    """The widest candidate of ``srcset`` ("url 320w, url 640w") no wider than EMAIL_WIDTH, else the
    narrowest; without one, ``src`` at ``width`` capped to EMAIL_WIDTH."""
    candidates = []
    for item in srcset.split(","):
        parts = item.split()
        if len(parts) == 2 and parts[1].endswith("w") and parts[1][:-1].isdigit():
            candidates.append((int(parts[1][:-1]), parts[0]))
    if not candidates:
        return src, min(width or EMAIL_WIDTH, EMAIL_WIDTH)
    fitting = [candidate for candidate in candidates if candidate[0] <= EMAIL_WIDTH]
    chosen_width, chosen = max(fitting) if fitting else min(candidates)
    return chosen, min(chosen_width, EMAIL_WIDTH)


class EmailRewriter(HTMLParser):
    def __init__(self, page_url: str, citations: dict[int, str]):
        super().__init__(convert_charrefs=True)
        self.page_url, self.citations, self.out = page_url, citations, []

    def absolute(self, url: str) -> str:
        cited = CITATION.match(url)
        if cited and int(cited.group(1)) in self.citations:
            return self.citations[int(cited.group(1))]
        if url.startswith("#"):
            return f"{self.page_url}{url}"
        joined = urljoin(f"{settings.SITE_URL}/", url.strip())
        return joined if urlsplit(joined).scheme.lower() in SAFE_SCHEMES else ""

    def handle_starttag(self, tag, attrs):
        if tag in {"picture", "source"}:
            return
        values = dict(attrs)
        if tag == "img":
            values = self.email_image(values)
        for name in URL_ATTRIBUTES & values.keys():
            values[name] = self.absolute(values[name] or "")
        printed = "".join(f' {name}="{html.escape(value or "")}"' for name, value in values.items())
        self.out.append(f"<{tag}{printed}>")

    def email_image(self, values: dict) -> dict:
        width, height = _int(values.get("width")), _int(values.get("height"))
        src, shown = choose_rendition(values.get("srcset") or "", values.get("src") or "", width)
        values = {name: value for name, value in values.items() if name not in DROPPED_IMG_ATTRIBUTES}
        values.update(src=src, width=str(shown), style="max-width:100%;height:auto")
        if width and height:
            values["height"] = str(round(height * shown / width))
        return values

    def handle_endtag(self, tag):
        if tag not in VOID and tag != "picture":
            self.out.append(f"</{tag}>")

    def handle_data(self, data):
        self.out.append(html.escape(data, quote=False))


def _int(value) -> int:
    return int(value) if value and str(value).isdigit() else 0


def email_html(stored: str, page_url: str, citations: dict[int, str]) -> str:
    rewriter = EmailRewriter(page_url, citations)
    rewriter.feed(stored)
    rewriter.close()
    return "".join(rewriter.out)


BLOCKS = {"p", "div", "section", "article", "header", "footer", "ul", "ol", "dl", "table", "tr", "figure",
          "blockquote", "pre", "h1", "h2", "h3", "h4", "h5", "h6", "dt", "dd", "li", "figcaption", "br", "hr"}


class TextConverter(HTMLParser):
    """HTML to readable plain text: blocks on their own lines, list items dashed, link URLs kept."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.out, self.links, self.skip, self.pre = [], [], 0, 0

    def handle_starttag(self, tag, attrs):
        values = dict(attrs)
        if tag in {"style", "script", "head", "title"}:
            self.skip += 1
        elif tag in BLOCKS:
            self.out.append("\n\n" if tag in {"p", "h1", "h2", "h3", "section", "dl", "figure"} else "\n")
            self.out.append({"li": "- ", "h1": "# ", "h2": "## ", "h3": "### ", "dd": "  "}.get(tag, ""))
            self.pre += tag == "pre"
        if tag == "a":
            self.links.append((values.get("href") or "", len(self.out)))
        elif tag == "img" and values.get("alt"):
            self.out.append(f"[{values['alt']}]")

    def handle_endtag(self, tag):
        if tag in {"style", "script", "head", "title"}:
            self.skip = max(0, self.skip - 1)
        elif tag == "a" and self.links:
            href, start = self.links.pop()
            shown = "".join(self.out[start:]).strip()
            if href and href != shown and not href.startswith("mailto:"):
                self.out.append(f" <{href}>")
        elif tag == "pre":
            self.pre = max(0, self.pre - 1)

    def handle_data(self, data):
        if not self.skip:
            self.out.append(data if self.pre else re.sub(r"\s+", " ", data))


def plain_text(markup: str) -> str:
    converter = TextConverter()
    converter.feed(markup)
    converter.close()
    lines = [line.strip() if not line.startswith("  ") else line.rstrip() for line in "".join(converter.out).split("\n")]
    return re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip() + "\n"
