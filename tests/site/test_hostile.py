"""Hostile text in every source field never reaches a page or a feed as live markup."""
import json

import feedparser
import pytest

from blog.factories import AuthorFactory, PostFactory
from blog.models import Post
from digests.factories import (
    ActionItemFactory, DigestFactory, DigestReferenceFactory, FAQEntryFactory, ReferenceFactory, RepositoryFactory,
    TopicFactory,
)

from .hostile import CORPUS, live_markup

HOSTILE = "\n\n".join(CORPUS)
ONE_LINE = " ".join(item.replace("\n", " ") for item in CORPUS)


@pytest.fixture
def hostile_site(db):
    """Every text field readers can see, filled with the whole corpus."""
    topic = TopicFactory(name="Hostile" + ONE_LINE[:60], slug="hostile", description=ONE_LINE)
    repository = RepositoryFactory(full_name="evil/repo", topic=topic, description=ONE_LINE)
    digest = DigestFactory(topic=topic, headline="Hostile " + ONE_LINE[:250], summary="Cites [1]. " + HOSTILE,
                           body=HOSTILE + " [ref:1]", slug="hostile-digest", label=ONE_LINE[:60])
    reference = ReferenceFactory(repository=repository, title="Hostile ref " + ONE_LINE[:400], body=HOSTILE,
                                 url="https://github.com/evil/repo/pull/1")
    DigestReferenceFactory(digest=digest, reference=reference, number=1)
    ActionItemFactory(digest=digest, repository=repository, text="Hostile action " + ONE_LINE)
    FAQEntryFactory(digest=digest, question=("Hostile question " + ONE_LINE)[:300], answer=ONE_LINE)
    author = AuthorFactory(name="Hostile" + ONE_LINE[:100], handle="evil\"><script>alert(1)</script>",
                           slug="hostile-author", bio=ONE_LINE)
    post = PostFactory(title="Hostile " + ONE_LINE[:280], slug="hostile-post", body=HOSTILE, excerpt=ONE_LINE,
                       disclosure=ONE_LINE[:300], authors=[author],
                       tags=["<script>alert('tag')</script>", "onerror=alert(1)"])
    return {"digest": digest, "post": post, "author": author, "repository": repository, "topic": topic}


def tag_slug(post: Post) -> str:
    return post.tags.order_by("slug").first().slug


def pages(content) -> list[str]:
    post = content["post"]
    return [
        "/", "/wire/", "/wire/?topic=hostile", content["digest"].get_absolute_url(), "/topics/", "/topics/hostile/",
        "/repos/evil/repo/", "/posts/", post.get_absolute_url(), "/tags/", f"/tags/{tag_slug(post)}/",
        "/authors/hostile-author/", "/search/?q=alert", "/search/?q=hostile", "/search/?q=script",
        f"/search/?q={ONE_LINE[:150]}",
    ]


def feeds(content) -> list[str]:
    post = content["post"]
    bases = ["/wire/", "/posts/", "/topics/hostile/", "/repos/evil/repo/", "/authors/hostile-author/",
             f"/tags/{tag_slug(post)}/"]
    return [f"{base}feed.{fmt}" for base in bases for fmt in ("atom", "rss", "json")]


@pytest.mark.django_db
def test_no_page_carries_live_markup_from_hostile_text(client, hostile_site):
    for url in pages(hostile_site):
        response = client.get(url)
        assert response.status_code == 200, url
        html = response.content.decode()
        assert live_markup(html) == [], url
        if "/search/" not in url or "hostile" in url:
            assert "Hostile" in html or "alert(" in html, url  # the hostile content is there, as text


@pytest.mark.django_db
def test_hostile_titles_are_shown_as_text(client, hostile_site):
    html = client.get(hostile_site["post"].get_absolute_url()).content.decode()
    assert "&lt;script&gt;alert(&#x27;s1&#x27;)&lt;/script&gt;" in html  # the title, escaped


@pytest.mark.django_db
def test_no_feed_carries_live_markup_from_hostile_text(client, hostile_site):
    for url in feeds(hostile_site):
        response = client.get(url)
        assert response.status_code == 200, url
        if url.endswith(".json"):
            feed = json.loads(response.content)
            fragments = [  # titles are plain text in JSON Feed; the HTML fields are checked
                value for item in feed["items"] for value in (item.get("content_html"), item.get("summary")) if value
            ]
        else:
            parsed = feedparser.parse(response.content, sanitize_html=False, resolve_relative_uris=False)
            assert not parsed.bozo, (url, parsed.get("bozo_exception"))
            fragments = [entry.content[0].value for entry in parsed.entries] + [
                entry.summary for entry in parsed.entries]
        assert fragments, url
        for fragment in fragments:
            assert live_markup(fragment) == [], (url, fragment[:200])


@pytest.mark.django_db
def test_json_ld_stays_data_when_fed_hostile_text(client, hostile_site):
    from .helpers import json_ld

    for url in (hostile_site["digest"].get_absolute_url(), hostile_site["post"].get_absolute_url()):
        blocks = json_ld(client.get(url).content.decode())
        assert blocks and all(block["@context"] == "https://schema.org" for block in blocks)


def test_the_checker_finds_what_it_looks_for():
    """The checker itself must fail on each kind of live markup, or the tests above prove nothing."""
    for sample in ["<script>x</script>", "<img src=x onerror=y>", "<iframe src=a></iframe>", '<a href="javascript:x">',
                   '<a href="&#106;avascript:x">', '<a href=" JAVASCRIPT:x">', "<svg onload=x>", '<p style="x">',
                   "<form action=x>", '<object data="x">']:
        assert live_markup(sample), sample
    assert live_markup('<a href="https://example.com">ok</a><p>text</p>') == []
