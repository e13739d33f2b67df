"""Helpers for reading rendered pages the way a reader (or a crawler) does."""
import json
from html.parser import HTMLParser

from django.db import connection
from django.test.utils import CaptureQueriesContext


class _TextAndScripts(HTMLParser):
    """Visible text in document order, and the JSON-LD blocks, from an HTML page."""

    SKIP = {"script", "style", "title", "head"}
    BLOCKS = {
        "p", "div", "li", "h1", "h2", "h3", "h4", "h5", "h6", "dt", "dd", "section", "article", "header", "footer",
        "nav", "ul", "ol", "dl", "main", "form", "figure", "figcaption", "br", "tr", "td", "th", "pre", "blockquote",
    }

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.chunks: list[str] = []
        self.json_ld: list[str] = []
        self._stack: list[tuple[str, dict]] = []

    def handle_starttag(self, tag, attrs):
        if tag in self.BLOCKS:
            self.chunks.append(" ")
        if tag not in {"meta", "link", "br", "img", "input", "hr", "rect", "line"}:
            self._stack.append((tag, dict(attrs)))

    def handle_endtag(self, tag):
        if tag in self.BLOCKS:
            self.chunks.append(" ")
        while self._stack:
            if self._stack.pop()[0] == tag:
                break

    def handle_data(self, data):
        tags = [tag for tag, _attrs in self._stack]
        if self._stack and self._stack[-1][0] == "script" and self._stack[-1][1].get("type") == "application/ld+json":
            self.json_ld.append(data)
        elif not self.SKIP.intersection(tags):
            self.chunks.append(data)


def parse(html: str) -> _TextAndScripts:
    parser = _TextAndScripts()
    parser.feed(html)
    return parser


def visible_text(html: str) -> str:
    """The page's visible text with whitespace collapsed."""
    return " ".join("".join(parse(html).chunks).split())


def json_ld(html: str) -> list[dict]:
    return [json.loads(block) for block in parse(html).json_ld]


def assert_in_order(text: str, expected: list[str]) -> None:
    """Each expected string occurs in `text`, each after the previous one."""
    position = 0
    for item in expected:
        found = text.find(item, position)
        assert found >= 0, f"{item!r} not found after position {position}: …{text[position:position + 200]!r}"
        position = found + len(item)


def count_queries(client, url: str) -> int:
    with CaptureQueriesContext(connection) as queries:
        response = client.get(url)
    assert response.status_code == 200, (url, response.status_code)
    return len(queries)


def prepared_statements(run, like: str) -> list[str]:
    """Run `run()` past psycopg's prepare threshold; the connection's prepared statements matching `like`.

    A statement psycopg prepares may get PostgreSQL's generic plan (publishing.compiled.planned_per_run).
    """
    connection.ensure_connection()
    for _ in range(connection.connection.prepare_threshold + 2):
        run()
    with connection.cursor() as cursor:
        cursor.execute("SELECT statement FROM pg_prepared_statements WHERE statement LIKE %s", [like])
        return [row[0] for row in cursor.fetchall()]
