"""Feeds: Atom, RSS 2.0 and JSON Feed 1.1 parse cleanly, carry full content, every author and real dates."""
import datetime
import json

import feedparser
import pytest

FEEDS = {
    "/wire/": "The Wire", "/posts/": "posts", "/tags/cuda/": "cuda", "/authors/edward-yang/": "Edward Yang",
    "/topics/pytorch/": "PyTorch", "/repos/pytorch/pytorch/": "pytorch/pytorch",
}
XML_FORMATS = {"atom": "application/atom+xml", "rss": "application/rss+xml"}


def fetch(client, url):
    response = client.get(url)
    assert response.status_code == 200, url
    return response


@pytest.mark.django_db
@pytest.mark.parametrize("base", FEEDS)
@pytest.mark.parametrize("fmt", XML_FORMATS)
def test_xml_feeds_parse_cleanly(client, site, base, fmt):
    response = fetch(client, f"{base}feed.{fmt}")
    assert response["Content-Type"].startswith(XML_FORMATS[fmt])
    parsed = feedparser.parse(response.content)
    assert not parsed.bozo, parsed.get("bozo_exception")
    assert parsed.version == ("atom10" if fmt == "atom" else "rss20")
    assert FEEDS[base].lower() in parsed.feed.title.lower()
    assert parsed.entries
    for entry in parsed.entries:
        assert entry.title and entry.link.startswith("http://testserver/")
        assert entry.published_parsed
        assert fmt == "rss" or entry.updated_parsed
        assert entry.content[0].value  # full content, not only the summary


@pytest.mark.django_db
@pytest.mark.parametrize("fmt", XML_FORMATS)
def test_post_feeds_carry_every_author_in_order_and_the_full_body(client, site, fmt):
    parsed = feedparser.parse(fetch(client, f"/posts/feed.{fmt}").content)
    entry = next(entry for entry in parsed.entries if entry.title == "RL with torch.compile")
    assert [author.get("name") for author in entry.authors] == ["Jiani Wang", "Edward Yang"]
    if fmt == "atom":
        assert [author.get("href") for author in entry.authors] == [
            "http://testserver/authors/jiani-wang/", "http://testserver/authors/edward-yang/"]
    assert "<em>co-authored</em>" in entry.content[0].value
    assert '<pre><code class="language-python">' in entry.content[0].value
    assert {tag.term for tag in entry.tags} == {"cuda", "rl"}
    post = site.posts[1]
    assert datetime.datetime(*entry.published_parsed[:6], tzinfo=datetime.UTC) == post.published_at.replace(microsecond=0)


@pytest.mark.django_db
def test_digest_feed_entries_hold_the_whole_digest_with_working_citation_links(client, site):
    parsed = feedparser.parse(fetch(client, "/wire/feed.atom").content)
    digest = site.digests[-1]
    entry = next(entry for entry in parsed.entries if entry.title == digest.headline)
    content = entry.content[0].value
    url = f"http://testserver{digest.get_absolute_url()}"
    assert f'href="{url}#ref-1"' in content and 'id="ref-1"' in content
    for item in digest.action_items.all():
        assert item.text in content
    for cited in digest.digest_references.all():
        assert cited.reference.title in content
    assert entry.authors[0].name == "RepoJournal"
    assert entry.summary.startswith("<p>Published summary 2")


@pytest.mark.django_db
@pytest.mark.parametrize("base", FEEDS)
def test_json_feeds_follow_json_feed_1_1(client, site, base):
    response = fetch(client, f"{base}feed.json")
    assert response["Content-Type"].startswith("application/feed+json")
    feed = json.loads(response.content)
    assert feed["version"] == "https://jsonfeed.org/version/1.1"
    assert feed["title"] and feed["home_page_url"].startswith("http://testserver/")
    assert feed["feed_url"] == f"http://testserver{base}feed.json"
    assert feed["items"]
    for item in feed["items"]:
        assert {"id", "url", "title", "content_html", "date_published", "date_modified", "authors"} <= item.keys()
        datetime.datetime.fromisoformat(item["date_published"])
        assert all(author["name"] for author in item["authors"])
    # feedparser 6.0 reads only XML feeds, so JSON Feed is checked against the spec's required fields here.


@pytest.mark.django_db
def test_json_post_feed_lists_all_authors(client, site):
    feed = json.loads(fetch(client, "/posts/feed.json").content)
    item = next(item for item in feed["items"] if item["title"] == "RL with torch.compile")
    assert item["authors"] == [
        {"name": "Jiani Wang", "url": "http://testserver/authors/jiani-wang/"},
        {"name": "Edward Yang", "url": "http://testserver/authors/edward-yang/"},
    ]
    assert sorted(item["tags"]) == ["cuda", "rl"]


@pytest.mark.django_db
@pytest.mark.parametrize(
    "page, feeds",
    [("/", ["/wire/", "/posts/"]), ("/wire/", ["/wire/"]), ("/posts/", ["/posts/"]), ("/tags/cuda/", ["/tags/cuda/"]),
     ("/authors/edward-yang/", ["/authors/edward-yang/"]), ("/topics/pytorch/", ["/topics/pytorch/"]),
     ("/repos/pytorch/pytorch/", ["/repos/pytorch/pytorch/"])],
)
def test_listing_pages_advertise_their_feeds(client, site, page, feeds):
    html = fetch(client, page).content.decode()
    for base in feeds:
        for fmt, mime in {**XML_FORMATS, "json": "application/feed+json"}.items():
            assert f'<link rel="alternate" type="{mime}"' in html
            assert f'href="{base}feed.{fmt}"' in html


@pytest.mark.django_db
def test_unknown_feed_format_is_404(client, site):
    assert client.get("/wire/feed.xml").status_code == 404


@pytest.mark.django_db
@pytest.mark.parametrize("fmt", ["atom", "rss", "json"])
def test_post_feeds_follow_byline_and_tag_edits_in_one_query(client, site, fmt, django_assert_num_queries):
    """Post feeds print the stored ``authors_tags``: edits to bylines, authors and tags show at once."""
    ezyang, jiani = site.authors
    post = site.posts[1]  # "RL with torch.compile" by Jiani Wang and Edward Yang
    jiani.name, jiani.slug = "Jiani W.", "jiani-w"
    jiani.save()
    post.tags.remove("rl")
    post.tags.add("compile")
    post.post_authors.get(author=ezyang).delete()

    with django_assert_num_queries(1):
        content = fetch(client, f"/posts/feed.{fmt}").content

    if fmt == "json":
        item = next(item for item in json.loads(content)["items"] if item["title"] == post.title)
        authors, tags = [(author["name"], author["url"]) for author in item["authors"]], item["tags"]
    else:
        entry = next(entry for entry in feedparser.parse(content).entries if entry.title == post.title)
        authors = [(author.get("name"), author.get("href")) for author in entry.authors]
        tags = [tag.term for tag in entry.tags]
    assert [name for name, _ in authors] == ["Jiani W."]
    if fmt != "rss":  # RSS names authors (dc:creator) without links
        assert [url for _, url in authors] == ["http://testserver/authors/jiani-w/"]
    assert tags == ["compile", "cuda"]
