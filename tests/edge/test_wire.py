"""Bytes on the wire (issue 25), through the real Varnish: text is gzipped at the edge, one stored
object serves readers with and without gzip, and static files are fingerprinted, pre-compressed
and kept for a year.

What the edge compresses and why (only what it stores and shares): docs/deployment.md,
"Compression and static files".
"""
import gzip
import re
import uuid

import httpx
import pytest

from accounts.models import ApiToken
from blog.factories import PostFactory

ONE_YEAR = 365 * 24 * 3600


@pytest.fixture(autouse=True)
def committed(edge, django_db_blocker):
    """Rows are committed at once, so the app processes see them (as in test_edge.py)."""
    with django_db_blocker.unblock():
        yield


def unique(word: str) -> str:
    return f"{word}-{uuid.uuid4().hex[:8]}"


@pytest.fixture
def token():
    from django.contrib.auth import get_user_model

    user = get_user_model().objects.create_superuser(unique("wire-boss"), password="pw")
    return ApiToken.issue(user, "wire tests", [scope.value for scope in ApiToken.Scope])[1]


def raw_get(edge, path: str, accept_encoding: str | None, **headers) -> tuple[httpx.Response, bytes]:
    """The response and its body exactly as it crossed the wire (httpx would otherwise decode it).

    `accept_encoding=None` sends no Accept-Encoding at all, as a client without gzip does.
    """
    with edge.client() as client:
        del client.headers["Accept-Encoding"]
        if accept_encoding is not None:
            headers["Accept-Encoding"] = accept_encoding
        with client.stream("GET", path, headers=headers) as response:
            return response, b"".join(response.iter_raw())


def max_age(response: httpx.Response) -> int:
    found = re.search(r"(?:^|,)\s*max-age=(\d+)", response.headers.get("Cache-Control", ""))
    return int(found.group(1)) if found else 0


def test_a_page_is_gzipped_for_readers_who_accept_it_and_one_object_serves_both(edge):
    post = PostFactory(slug=unique("wire"), title="Compressed at the edge", body="Words worth sending. " * 300)
    path = f"/posts/{post.slug}/"
    plain, plain_body = raw_get(edge, path, None)  # the miss: the edge fetches and stores
    zipped, zipped_body = raw_get(edge, path, "gzip, deflate, br, zstd")  # as a browser asks
    plain_again, plain_again_body = raw_get(edge, path, None)
    zipped_again, _ = raw_get(edge, path, "gzip")
    assert plain.status_code == zipped.status_code == 200
    assert [r.headers["X-Cache"] for r in (plain, zipped, plain_again, zipped_again)] == ["MISS", "HIT", "HIT", "HIT"]
    assert zipped.headers["Content-Encoding"] == zipped_again.headers["Content-Encoding"] == "gzip"
    assert "Content-Encoding" not in plain.headers and "Content-Encoding" not in plain_again.headers
    assert gzip.decompress(zipped_body) == plain_body == plain_again_body
    assert "Compressed at the edge" in plain_body.decode()
    assert len(zipped_body) < len(plain_body) / 2
    for response in (plain, zipped):
        assert "accept-encoding" in response.headers["Vary"].lower()


def test_text_the_edge_shares_travels_gzipped_and_nothing_else_is_touched(edge, token):
    """Pages, feeds, the sitemap and token-less API reads are gzipped. A PNG card is already
    compressed; a token holder's answer is never shared, so it stays as the app sent it: its strong
    ETag (what a write's If-Match must send) stays strong, and nothing secret shares a gzip stream
    with what a client sent."""
    post = PostFactory(slug=unique("listed"), body="A listing's worth of words. " * 100)
    for path in ("/", "/posts/", "/posts/feed.atom", "/sitemap.xml", "/api/v1/posts/"):
        zipped, body = raw_get(edge, path, "gzip")
        assert zipped.status_code == 200, path
        assert zipped.headers.get("Content-Encoding") == "gzip", path
        assert len(gzip.decompress(body)) > len(body), path

    post.refresh_from_db()
    card, card_body = raw_get(edge, post.social_card_url, "gzip")
    assert card.status_code == 200 and card.headers["Content-Type"] == "image/png"
    assert "Content-Encoding" not in card.headers and card_body.startswith(b"\x89PNG")

    private, _ = raw_get(edge, f"/api/v1/posts/{post.slug}", "gzip", Authorization=f"Bearer {token}")
    assert private.status_code == 200 and private.headers["X-Cache"] == "MISS"
    assert "Content-Encoding" not in private.headers
    assert not private.headers["ETag"].startswith("W/")


def test_pages_link_fingerprinted_static_files_kept_for_a_year_and_precompressed(edge):
    """The plain name still answers (old pages, bookmarks), but its content may change: not immutable."""
    _home, body = raw_get(edge, "/", None)
    linked = sorted(set(re.findall(r'(?:href|src)="(/static/[^"]+)"', body.decode())))
    assert linked, "the home page links no static file"
    for url in linked:
        assert re.search(r"\.[0-9a-f]{12}\.\w+$", url), f"{url} is not fingerprinted"
        plain, plain_body = raw_get(edge, url, None)
        zipped, zipped_body = raw_get(edge, url, "gzip")
        assert plain.status_code == zipped.status_code == 200, url
        for response in (plain, zipped):
            assert "immutable" in response.headers["Cache-Control"] and max_age(response) >= ONE_YEAR, url
        if url.endswith(".css"):
            assert zipped.headers["Content-Encoding"] == "gzip"
            assert gzip.decompress(zipped_body) == plain_body
    plain_name, _ = raw_get(edge, "/static/css/site.css", "gzip")
    assert plain_name.status_code == 200
    assert "immutable" not in plain_name.headers["Cache-Control"] and max_age(plain_name) < ONE_YEAR
