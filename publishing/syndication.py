"""Atom, RSS 2.0 and JSON Feed 1.1 from one Django ``Feed`` class.

Django's syndication framework decides *what* a feed holds; the generators here
only add what its stock ones lack: full content next to the summary, every
author of a post (Django writes one), and JSON Feed 1.1. A reader feed is
declared once and served in the three formats at ``.../feed.atom``,
``.../feed.rss`` and ``.../feed.json``.
"""
import json
import re
from dataclasses import dataclass
from xml.sax.saxutils import escape as xml_escape

from django.contrib.sites.shortcuts import get_current_site
from django.contrib.syndication.views import Feed, add_domain
from django.urls import register_converter, reverse
from django.utils.feedgenerator import Atom1Feed, Rss201rev2Feed, SyndicationFeed, rfc3339_date

from .shown import shows

DC_NS = "http://purl.org/dc/elements/1.1/"
CONTENT_NS = "http://purl.org/rss/1.0/modules/content/"


class AtomFeed(Atom1Feed):
    """Atom with ``<content type="html">`` and one ``<author>`` per author."""

    def add_item_elements(self, handler, item):
        super().add_item_elements(handler, item)
        for name, link in item.get("authors", ()):
            handler.startElement("author", {})
            handler.addQuickElement("name", name)
            if link:
                handler.addQuickElement("uri", link)
            handler.endElement("author")
        if item.get("content_html"):
            handler.addQuickElement("content", item["content_html"], {"type": "html"})


class StoredEntriesAtomFeed(AtomFeed):
    """Atom whose entries arrive already written (``atom_entry``): the head is Django's, the entries are
    copied into the document as they are, with no element-by-element writing per entry."""

    def __init__(self, *args, entries: list[str], latest, **kwargs):
        super().__init__(*args, **kwargs)
        self.entries, self.latest = entries, latest

    def latest_post_date(self):
        return self.latest or super().latest_post_date()

    def write_items(self, handler):
        handler.ignorableWhitespace("".join(self.entries))  # written unescaped: atom_entry escaped each value


def _attr(value: str) -> str:
    return xml_escape(value, {'"': "&quot;"})


def atom_entry(*, title: str, link: str, published, updated, authors, summary: str, categories, content: str) -> str:
    """One ``<entry>`` exactly as ``AtomFeed`` writes it (same elements, order and escaping), as one string."""
    parts = [f'<entry><title>{xml_escape(title)}</title><link href="{_attr(link)}" rel="alternate"/>',
             f"<published>{rfc3339_date(published)}</published><updated>{rfc3339_date(updated)}</updated>",
             f'<id>{xml_escape(link)}</id><summary type="html">{xml_escape(summary)}</summary>']
    parts += [f'<category term="{_attr(term)}"/>' for term in categories]
    for name, uri in authors:
        parts.append(f"<author><name>{xml_escape(name)}</name>{f'<uri>{xml_escape(uri)}</uri>' if uri else ''}</author>")
    if content:
        parts.append(f'<content type="html">{xml_escape(content)}</content>')
    parts.append("</entry>")
    return "".join(parts)


class RssFeed(Rss201rev2Feed):
    """RSS 2.0 with ``content:encoded`` and a ``dc:creator`` per author (RSS's author wants e-mail)."""

    def rss_attributes(self):
        return {**super().rss_attributes(), "xmlns:dc": DC_NS, "xmlns:content": CONTENT_NS}

    def add_item_elements(self, handler, item):
        super().add_item_elements(handler, item)
        for name, _link in item.get("authors", ()):
            handler.addQuickElement("dc:creator", name)
        if item.get("content_html"):
            handler.addQuickElement("content:encoded", item["content_html"])


class JsonFeed(SyndicationFeed):
    """JSON Feed 1.1 (https://www.jsonfeed.org/version/1.1/)."""

    content_type = "application/feed+json; charset=utf-8"

    def write(self, outfile, encoding):
        outfile.write(json.dumps(self.as_dict(), ensure_ascii=False, indent=1))

    def as_dict(self) -> dict:
        feed = {
            "version": "https://jsonfeed.org/version/1.1",
            "title": self.feed["title"],
            "home_page_url": self.feed["link"],
            "feed_url": self.feed["feed_url"],
            "description": self.feed["description"],
            "language": self.feed["language"],
            "items": [self.item_dict(item) for item in self.items],
        }
        if self.feed["author_name"]:
            feed["authors"] = [{"name": self.feed["author_name"], "url": self.feed["author_link"]}]
        return {key: value for key, value in feed.items() if value is not None}

    @staticmethod
    def item_dict(item: dict) -> dict:
        entry = {
            "id": item["unique_id"] or item["link"],
            "url": item["link"],
            "title": item["title"],
            "content_html": item.get("content_html") or item["description"],
            "summary": item["description"],
            "date_published": item["pubdate"] and rfc3339_date(item["pubdate"]),
            "date_modified": item["updateddate"] and rfc3339_date(item["updateddate"]),
            "authors": [
                {key: value for key, value in (("name", name), ("url", link)) if value}
                for name, link in item.get("authors", ())
            ],
            "tags": list(item["categories"]),
        }
        return {key: value for key, value in entry.items() if value not in (None, [], "")}


#: A URL-bearing attribute in sanitised HTML (nh3 writes every value double-quoted).
URL_ATTRIBUTE = re.compile(r'\b(href|src|srcset)="([^"]*)"')


def absolute_urls(content: str, link: str, origin: str) -> str:
    """`content` with every URL a feed reader could not resolve made absolute: in-page anchors (``#ref-3``)
    point into the entry's `link`, site paths (``/media/...``, ``/posts/...``) get the site's `origin`;
    a ``srcset`` has each candidate's URL made absolute."""
    def absolute(url: str) -> str:
        if url.startswith("#"):
            return link + url
        return origin + url if url.startswith("/") and not url.startswith("//") else url

    def rewrite(match: re.Match) -> str:
        name, value = match.groups()
        if name == "srcset":
            value = ", ".join(" ".join([absolute(words[0]), *words[1:]])
                              for words in (candidate.split() for candidate in value.split(",")) if words)
        else:
            value = absolute(value)
        return f'{name}="{value}"'

    return URL_ATTRIBUTE.sub(rewrite, content)


FEED_TYPES = {"atom": AtomFeed, "rss": RssFeed, "json": JsonFeed}
FEED_LABELS = {"atom": "Atom", "rss": "RSS", "json": "JSON Feed"}
FEED_MIME = {"atom": "application/atom+xml", "rss": "application/rss+xml", "json": "application/feed+json"}


class FeedFormatConverter:
    """``atom``, ``rss`` or ``json`` in ``feed.<format>``; anything else is a 404."""

    regex = "atom|rss|json"

    def to_python(self, value: str) -> str:
        return value

    def to_url(self, value: str) -> str:
        return value


register_converter(FeedFormatConverter, "feedformat")


def feed_view(feed_class: type[Feed]):
    """One view serving `feed_class` in every format, chosen by the ``fmt`` URL argument."""
    instances = {
        fmt: type(f"{feed_class.__name__}_{fmt}", (feed_class,), {"feed_type": generator})()
        for fmt, generator in FEED_TYPES.items()
    }

    def view(request, fmt: str, **kwargs):
        return instances[fmt](request, **kwargs)

    view.__doc__ = feed_class.__doc__
    return view


@dataclass(frozen=True)
class FeedLink:
    """A feed a page advertises with ``<link rel="alternate">`` and a visible link."""

    title: str
    fmt: str
    url: str

    @property
    def mime_type(self) -> str:
        return FEED_MIME[self.fmt]

    @property
    def label(self) -> str:
        return FEED_LABELS[self.fmt]


def feed_links(title: str, url_name: str, *args) -> list[FeedLink]:
    """The three feeds of one listing, for its page's head and footer."""
    return [FeedLink(title, fmt, reverse(url_name, args=[*args, fmt])) for fmt in FEED_TYPES]


def site_origin(request) -> str:
    """``http(s)://host`` as feed links are written (Django's ``add_domain`` with the current site)."""
    return add_domain(get_current_site(request).domain, "/", request.is_secure()).rstrip("/")


class ReaderFeed(Feed):
    """Defaults every reader feed shares: full content and its authors travel as extra item data."""

    language = "en"
    #: Items per feed, each with its full content: 20 keeps a posts feed near 60 KB (readers poll it often).
    limit = 20

    #: Whether the Atom format is written from ``stored_atom_entries`` (one string per entry).
    stored_atom = False

    def get_feed(self, obj, request):
        """Make author links and the content's URLs (anchors, links, images) absolute, as feed readers need;
        note what the feed shows."""
        if self.stored_atom and self.feed_type is AtomFeed:
            return self.stored_atom_feed(obj, request)
        feed = super().get_feed(obj, request)
        shows(request, obj, [item.pop("shown") for item in feed.items])
        origin = site_origin(request)
        for item in feed.items:
            item["authors"] = [(name, link and request.build_absolute_uri(link)) for name, link in item["authors"]]
            item["content_html"] = absolute_urls(item["content_html"], item["link"], origin)
        return feed

    def item_extra_kwargs(self, item):
        return {"content_html": self.item_content(item), "authors": self.item_authors(item), "shown": item}

    def item_content(self, item) -> str:
        return ""

    def item_authors(self, item) -> list[tuple[str, str]]:
        return []

    def item_updateddate(self, item):
        return max(item.updated_at, item.published_at)

    def item_pubdate(self, item):
        return item.published_at

    def stored_atom_feed(self, obj, request) -> StoredEntriesAtomFeed:
        """The Atom feed with its entries written by ``stored_atom_entries`` from stored renderings.

        Django's generic path looks up a dozen attributes per entry and writes its XML element by
        element: for a feed of full posts that was most of the time a request took (the posts feed
        served at 0.037x the benchmark's baseline, pages at 0.09x or better).
        """
        secure = request.is_secure()
        domain = get_current_site(request).domain
        origin = site_origin(request)
        items = self.items(obj)
        shows(request, obj, items)
        entries, latest = self.stored_atom_entries(items, origin)
        return StoredEntriesAtomFeed(
            title=self._get_dynamic_attr("title", obj), link=add_domain(domain, self._get_dynamic_attr("link", obj), secure),
            description=self._get_dynamic_attr("description", obj), language=self.language,
            feed_url=add_domain(domain, request.path, secure), entries=entries, latest=latest,
        )

    def stored_atom_entries(self, items, origin: str) -> tuple[list[str], object]:
        """(the entries of ``items`` as ``atom_entry`` strings, the latest update among them); for ``stored_atom`` feeds."""
        raise NotImplementedError
