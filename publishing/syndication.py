"""Atom, RSS 2.0 and JSON Feed 1.1 from one Django ``Feed`` class.

Django's syndication framework decides *what* a feed holds; the generators here
only add what its stock ones lack: full content next to the summary, every
author of a post (Django writes one), and JSON Feed 1.1. A reader feed is
declared once and served in the three formats at ``.../feed.atom``,
``.../feed.rss`` and ``.../feed.json``.
"""
import json
from dataclasses import dataclass

from django.contrib.syndication.views import Feed
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


class ReaderFeed(Feed):
    """Defaults every reader feed shares: full content and its authors travel as extra item data."""

    language = "en"
    #: Items per feed, each with its full content: 20 keeps a posts feed near 60 KB (readers poll it often).
    limit = 20

    def get_feed(self, obj, request):
        """Make author links and in-page anchors absolute, as feed readers need; note what the feed shows."""
        feed = super().get_feed(obj, request)
        shows(request, obj, [item.pop("shown") for item in feed.items])
        for item in feed.items:
            item["authors"] = [(name, link and request.build_absolute_uri(link)) for name, link in item["authors"]]
            item["content_html"] = item["content_html"].replace('href="#', f'href="{item["link"]}#')
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
