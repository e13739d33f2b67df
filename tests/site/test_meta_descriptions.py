"""Page descriptions (``<meta name="description">``, ``og:description``) are plain text cut at a word."""
import pytest

from blog.factories import PostFactory
from digests.factories import DigestFactory
from publishing.rendering import DESCRIPTION_CHARS, cut_at_word, describe

from .metas import metas

pytestmark = pytest.mark.django_db


def descriptions(client, url: str) -> tuple[str, str]:
    found = metas(client, url)
    return found["description"], found["og:description"]


def test_a_markdown_excerpt_becomes_plain_text(client):
    post = PostFactory(excerpt="**Bold** move: see [the docs](https://example.org/d) & `x < y`,\n\n"
                               "<em>then</em> &amp; *ship*.")
    description, og = descriptions(client, post.get_absolute_url())
    assert description == og == "Bold move: see the docs & x < y, then & ship."


def test_without_an_excerpt_the_body_is_described_and_cut_at_a_word(client):
    words = " ".join(f"word{n}" for n in range(80))
    post = PostFactory(excerpt="", body=f"# Heading\n\nSome *emphasis* and a [link](https://example.org).\n\n{words}")
    description, og = descriptions(client, post.get_absolute_url())
    assert description == og
    assert description.startswith("Heading Some emphasis and a link. word0 word1")
    assert description.endswith("…") and len(description) <= DESCRIPTION_CHARS + 1
    full = "Heading Some emphasis and a link. " + words
    assert full.startswith(description[:-1]) and full[len(description) - 1] == " "  # whole words only
    assert "*" not in description and "#" not in description and "](" not in description


def test_a_digest_summary_loses_markdown_and_citation_markers(client):
    digest = DigestFactory(summary="Shipped a **faster** path [1] for `torch.compile` [ref:2] & <b>more</b>.")
    description, og = descriptions(client, digest.get_absolute_url())
    assert description == og == "Shipped a faster path for torch.compile & more."


def test_scripts_and_entities_in_stored_text():
    assert describe("<script>alert(1)</script>Safe &lt;tag&gt; &amp; text") == "Safe <tag> & text"
    assert cut_at_word("short") == "short"
    assert cut_at_word("abc def ghi", limit=6) == "abc…"
    assert cut_at_word("abc def, ghi", limit=8) == "abc def…"
