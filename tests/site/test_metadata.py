"""Titles, descriptions, canonical URLs, OpenGraph and JSON-LD; sitemap.xml and robots.txt."""
import re
import xml.etree.ElementTree as ET

import pytest

from .helpers import json_ld

PAGES = ["/", "/wire/", "/topics/", "/topics/pytorch/", "/repos/pytorch/pytorch/", "/posts/", "/tags/", "/tags/cuda/",
         "/authors/edward-yang/", "/search/?q=cuda", "digest", "/posts/eager-cuda-memory/"]


def meta(html: str, attribute: str, name: str) -> str:
    match = re.search(rf'<meta {attribute}="{re.escape(name)}" content="([^"]*)"', html)
    assert match, f"no {name}"
    return match.group(1)


def by_type(blocks: list[dict], schema_type: str) -> dict:
    matches = [block for block in blocks if block["@type"] == schema_type]
    assert len(matches) == 1, [block["@type"] for block in blocks]
    return matches[0]


@pytest.mark.django_db
@pytest.mark.parametrize("url", PAGES)
def test_every_page_has_title_description_canonical_and_opengraph(client, site, url):
    url = site.digests[0].get_absolute_url() if url == "digest" else url
    html = client.get(url).content.decode()
    title = re.search(r"<title>([^<]+)</title>", html).group(1)
    assert "RepoJournal" in title or "The Wire" in title
    assert len(meta(html, "name", "description")) > 10
    path = url.split("?")[0]
    assert f'<link rel="canonical" href="http://127.0.0.1:8000{path}">' in html
    for prop in ("og:title", "og:description", "og:type", "og:url", "og:site_name"):
        assert meta(html, "property", prop)
    assert meta(html, "property", "og:url") == f"http://127.0.0.1:8000{path}"


@pytest.mark.django_db
def test_digest_json_ld_is_a_news_article_with_citations_faq_and_breadcrumbs(client, site):
    digest = site.digests[0]
    blocks = json_ld(client.get(digest.get_absolute_url()).content.decode())
    article = by_type(blocks, "NewsArticle")
    assert article["@context"] == "https://schema.org"
    assert article["headline"] == digest.headline
    assert article["datePublished"] == digest.published_at.isoformat()
    assert article["url"] == f"http://127.0.0.1:8000{digest.get_absolute_url()}"
    assert article["publisher"]["name"] == "RepoJournal"
    citations = article["citation"]
    assert [c["position"] for c in citations] == [1, 2]
    assert [c["name"] for c in citations] == [c.reference.title for c in digest.digest_references.all()]
    assert all(c["url"].startswith("https://github.com/") for c in citations)
    faq = by_type(blocks, "FAQPage")
    assert [(q["name"], q["acceptedAnswer"]["text"]) for q in faq["mainEntity"]] == digest.faq()
    crumbs = by_type(blocks, "BreadcrumbList")["itemListElement"]
    assert [c["name"] for c in crumbs] == ["Home", "The Wire", "PyTorch", digest.headline]
    assert [c["position"] for c in crumbs] == [1, 2, 3, 4]


@pytest.mark.django_db
def test_generated_faq_appears_in_json_ld_when_editors_wrote_none(client, site):
    digest = site.digests[1]
    faq = by_type(json_ld(client.get(digest.get_absolute_url()).content.decode()), "FAQPage")
    assert len(faq["mainEntity"]) == 3
    assert faq["mainEntity"][0]["name"] == f"What changed in PyTorch on {digest.display_date}?"


@pytest.mark.django_db
def test_post_json_ld_is_a_blog_posting_with_every_author(client, site):
    post = site.posts[1]
    blocks = json_ld(client.get(post.get_absolute_url()).content.decode())
    posting = by_type(blocks, "BlogPosting")
    assert posting["headline"] == post.title
    assert [(a["@type"], a["name"]) for a in posting["author"]] == [("Person", "Jiani Wang"), ("Person", "Edward Yang")]
    assert posting["author"][1]["url"] == "http://127.0.0.1:8000/authors/edward-yang/"
    assert posting["datePublished"] == post.published_at.isoformat()
    assert sorted(posting["keywords"]) == ["cuda", "rl"]
    assert [c["name"] for c in by_type(blocks, "BreadcrumbList")["itemListElement"]] == ["Home", "Posts", post.title]


@pytest.mark.django_db
def test_json_ld_cannot_be_broken_out_of(client, site):
    post = site.posts[0]
    post.title = "</script><script>alert(1)</script>"
    post.save()
    html = client.get(post.get_absolute_url()).content.decode()
    assert "<script>alert(1)" not in html
    assert by_type(json_ld(html), "BlogPosting")["headline"] == "</script><script>alert(1)</script>"


@pytest.mark.django_db
def test_sitemap_lists_published_pages_as_absolute_urls(client, site):
    response = client.get("/sitemap.xml")
    root = ET.fromstring(response.content)
    ns = {"s": "http://www.sitemaps.org/schemas/sitemap/0.9"}
    locations = {loc.text for loc in root.findall("s:url/s:loc", ns)}
    base = "http://127.0.0.1:8000"
    expected = {f"{base}/", f"{base}/wire/", f"{base}/posts/", f"{base}/tags/", f"{base}/topics/pytorch/",
                f"{base}/repos/pytorch/pytorch/", f"{base}/authors/edward-yang/", f"{base}/authors/jiani-wang/",
                f"{base}/tags/cuda/", f"{base}/tags/rl/"}
    expected |= {f"{base}{item.get_absolute_url()}" for item in [*site.digests, *site.posts]}
    assert expected <= locations
    assert not [loc for loc in locations if "secret" in loc]


@pytest.mark.django_db
def test_robots_txt_points_at_the_sitemap_and_keeps_crawlers_out_of_previews(client):
    response = client.get("/robots.txt")
    assert response["Content-Type"].startswith("text/plain")
    lines = response.content.decode().splitlines()
    assert "User-agent: *" in lines and "Disallow: /preview/" in lines and "Disallow: /admin/" in lines
    assert "Sitemap: http://127.0.0.1:8000/sitemap.xml" in lines


@pytest.mark.django_db
def test_404_page_is_styled_and_a_bad_page_number_is_404(client, site):
    response = client.get("/no/such/page/")
    assert response.status_code == 404
    html = response.content.decode()
    assert "Page not found" in html and "/static/css/site.css" in html
    for url in ("/wire/?page=999", "/wire/?page=abc", "/posts/?page=0", "/wire/?topic=nope", "/wire/?repository=a/b"):
        assert client.get(url).status_code == 404, url


def test_500_page_renders_without_the_database(rf):
    from reader.views import server_error

    response = server_error(rf.get("/"))
    assert response.status_code == 500
    assert b"Something went wrong" in response.content
