"""Reading a page's ``<meta>`` tags as a browser or a link unfurler does."""
from html.parser import HTMLParser


class _Metas(HTMLParser):
    """Every ``<meta>`` of a page by name or property, attribute values decoded as a browser decodes them."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.found: dict[str, str] = {}

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "meta" and "content" in attrs:
            self.found[attrs.get("name") or attrs.get("property") or ""] = attrs["content"]


def metas(client, url: str) -> dict[str, str]:
    """The ``<meta>`` contents of the page at `url`, by name or property."""
    parser = _Metas()
    parser.feed(client.get(url).content.decode())
    return parser.found
