"""Reader listings page by keyset cursor: no COUNT, no OFFSET when following links, same cost at any depth."""
import datetime
import html
import re

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from blog.factories import PostFactory
from publishing.pagination import PER_PAGE

from .helpers import visible_text

NEXT = re.compile(r'<a rel="next" href="([^"]+)"')
PREVIOUS = re.compile(r'<a rel="prev" href="([^"]+)"')
TITLE = re.compile(r'<h2 class="card-title"><a href="[^"]+">([^<]+)</a>')


def titles(page_html: str) -> list[str]:
    return TITLE.findall(page_html)


def follow(client, path: str, pattern: re.Pattern, page_html: str) -> str:
    link = pattern.search(page_html)
    assert link, "expected a pagination link"
    response = client.get(path + html.unescape(link.group(1)))
    assert response.status_code == 200
    return response.content.decode()


@pytest.fixture
def posts(db):
    """2½ pages of posts, published in pairs at the same time, so ties must be broken by id."""
    now = timezone.now()
    return [PostFactory(title=f"Paged post {n:03d}", published_at=now - datetime.timedelta(hours=1 + n // 2))
            for n in range(PER_PAGE * 2 + PER_PAGE // 2)]


@pytest.mark.django_db
def test_following_older_links_visits_every_post_once_in_order(client, posts):
    first = client.get("/posts/").content.decode()
    second = follow(client, "/posts/", NEXT, first)
    third = follow(client, "/posts/", NEXT, second)
    seen = titles(first) + titles(second) + titles(third)
    expected = [post.title for post in sorted(posts, key=lambda p: (p.published_at, p.pk), reverse=True)]
    assert seen == expected
    assert NEXT.search(third) is None
    assert "Page 3" in visible_text(third)


@pytest.mark.django_db
def test_newer_links_lead_back_and_page_one_is_the_plain_url(client, posts):
    first = client.get("/posts/").content.decode()
    second = follow(client, "/posts/", NEXT, first)
    third = follow(client, "/posts/", NEXT, second)
    assert titles(follow(client, "/posts/", PREVIOUS, third)) == titles(second)
    assert PREVIOUS.search(second).group(1) == "/posts/"
    assert PREVIOUS.search(first) is None


@pytest.mark.django_db
def test_page_numbers_still_work_and_match_the_cursor_pages(client, posts):
    first = client.get("/posts/").content.decode()
    second = follow(client, "/posts/", NEXT, first)
    assert titles(client.get("/posts/?page=2").content.decode()) == titles(second)


@pytest.mark.django_db
@pytest.mark.parametrize("query", ["cursor=nonsense", "cursor=", "page=0", "page=abc", "page=4", "page=1001"])
def test_bad_pages_are_404(client, posts, query):
    status = client.get(f"/posts/?{query}").status_code
    assert status == (200 if query == "cursor=" else 404)


@pytest.mark.django_db
def test_a_tampered_cursor_is_404(client, posts):
    link = html.unescape(NEXT.search(client.get("/posts/").content.decode()).group(1))
    assert client.get("/posts/" + link[:-3] + "xyz").status_code == 404


@pytest.mark.django_db
def test_a_deep_page_costs_the_same_queries_as_the_first_and_neither_counts_nor_skips(client, posts):
    second = follow(client, "/posts/", NEXT, client.get("/posts/").content.decode())
    deep = "/posts/" + html.unescape(NEXT.search(second).group(1))
    with CaptureQueriesContext(connection) as first_queries:
        client.get("/posts/")
    with CaptureQueriesContext(connection) as deep_queries:
        response = client.get(deep)
    assert response.status_code == 200 and "Page 3" in visible_text(response.content.decode())
    assert len(deep_queries) == len(first_queries)
    sql = " ".join(query["sql"].upper() for query in deep_queries)
    assert "OFFSET" not in sql and "COUNT(" not in sql


@pytest.mark.django_db
def test_links_keep_the_listing_filters(client, site):
    from digests.factories import DigestFactory

    for day in range(PER_PAGE + 1):
        DigestFactory(topic=site.topic, date=datetime.date(2024, 1, 1) + datetime.timedelta(days=day))
    page_html = client.get(f"/wire/?topic={site.topic.slug}").content.decode()
    assert f"topic={site.topic.slug}" in html.unescape(NEXT.search(page_html).group(1))
