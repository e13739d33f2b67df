"""Replay PyGithub's recorded REST exchanges (tests/fixtures/github/rest) with pytest-httpserver.

Each record is: protocol, verb, host, port, path+query, request headers (dict
repr), request body, status, response headers (list-of-tuples repr), response
body (one line), blank line. A 304 may end without a body line.
"""
import ast
from dataclasses import dataclass
from urllib.parse import urlsplit

from werkzeug import Response

from tests.fixtures import REST_RECORDINGS as REST
GITHUB = "https://api.github.com"
DROPPED_HEADERS = {"content-length", "transfer-encoding", "content-encoding", "connection", "status"}


@dataclass
class Record:
    method: str
    path: str
    query: str
    request_headers: dict
    status: int
    headers: list[tuple[str, str]]
    body: str

    def response(self, base_url: str, **header_overrides) -> Response:
        """The recorded response, with GitHub's URLs (in Link) pointing at the local server."""
        headers = {name: value.replace(GITHUB, base_url) for name, value in self.headers
                   if name.lower() not in DROPPED_HEADERS}
        headers.update(header_overrides)
        return Response(self.body, status=self.status, headers=headers)

    def header(self, name: str) -> str | None:
        return next((value for key, value in self.headers if key.lower() == name.lower()), None)


def load(name: str) -> list[Record]:
    lines = (REST / f"{name}.txt").read_text().split("\n")
    records, i = [], 0
    while i < len(lines):
        if lines[i] not in ("http", "https"):
            i += 1
            continue
        url = urlsplit(lines[i + 4])
        body = lines[i + 9] if i + 9 < len(lines) and lines[i + 9] not in ("http", "https") else ""
        records.append(Record(
            method=lines[i + 1], path=url.path, query=url.query,
            request_headers=ast.literal_eval(lines[i + 5]), status=int(lines[i + 7]),
            headers=ast.literal_eval(lines[i + 8]), body=body,
        ))
        i += 10
    return records


def base_url(httpserver) -> str:
    return httpserver.url_for("").rstrip("/")
