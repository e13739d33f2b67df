"""Every listing page and feed runs the same number of queries for 3 rows as for 30."""
import datetime

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from blog.factories import AuthorFactory, PostFactory
from digests.factories import FAQEntryFactory

from .conftest import make_digest
from .helpers import count_queries

LISTINGS = [
    "/", "/wire/", "/wire/?topic=pytorch", "/wire/?repository=pytorch/pytorch", "/topics/", "/topics/pytorch/",
    "/repos/pytorch/pytorch/", "/posts/", "/tags/", "/tags/cuda/", "/authors/edward-yang/", "/sitemap.xml",
    "/search/?q=published", "/search/?q=post",
    *[f"{base}feed.{fmt}" for base in ("/wire/", "/posts/", "/tags/cuda/", "/authors/edward-yang/", "/topics/pytorch/",
                                       "/repos/pytorch/pytorch/") for fmt in ("atom", "rss", "json")],
]


def add_rows(site, count: int, start: int) -> None:
    """`count` more published digests (3 references, 2 action items, FAQ) and posts (2 authors, 3 tags)."""
    ezyang = site.authors[0]
    for index in range(start, start + count):
        digest = make_digest(site.topic, site.repositories, n_refs=3, headline=f"Published headline extra {index}",
                             date=datetime.date(2025, 1, 1) + datetime.timedelta(days=index),
                             summary="Published extra [1][2][3].")
        FAQEntryFactory(digest=digest)
        coauthor = AuthorFactory(name=f"Co Author {index}", slug=f"co-author-{index}")
        PostFactory(title=f"Published post extra {index}", authors=[ezyang, coauthor],
                    tags=["cuda", f"extra{index}", "perf"])


@pytest.mark.django_db
def test_listing_pages_and_feeds_run_a_fixed_number_of_queries(client, site):
    add_rows(site, 1, start=0)  # 3 digests + 1 and 2 posts + 1: "few"
    few = {url: count_queries(client, url) for url in LISTINGS}
    add_rows(site, 30, start=1)  # 34 digests, 33 posts: more than a page
    many = {url: count_queries(client, url) for url in LISTINGS}
    assert many == few
    assert max(few.values()) <= 12, few


@pytest.mark.django_db
def test_detail_pages_run_a_fixed_number_of_queries(client, site):
    digest = make_digest(site.topic, site.repositories, n_refs=2, headline="Detail", date=datetime.date(2024, 1, 1))
    post = site.posts[1]
    urls = [digest.get_absolute_url(), post.get_absolute_url()]
    few = [count_queries(client, url) for url in urls]
    many_digest = make_digest(site.topic, site.repositories, n_refs=25, headline="Detail many",
                              date=datetime.date(2024, 1, 2))
    post.tags.add(*[f"many{n}" for n in range(20)])
    for n in range(10):
        PostFactory(authors=[site.authors[1], site.authors[0]], tags=["rl", "cuda"])
    many = [count_queries(client, url) for url in (many_digest.get_absolute_url(), post.get_absolute_url())]
    assert many == few


@pytest.mark.django_db
def test_a_post_page_loads_the_post_once_with_only_what_it_prints(client, site):
    """``PostQuerySet.for_page`` names the columns the page prints: one it left out would be fetched
    by a query of its own (Django loads a deferred field on first access), on every uncached page."""
    post = site.posts[1]
    with CaptureQueriesContext(connection) as queries:
        response = client.get(post.get_absolute_url())
    assert response.status_code == 200
    post_loads = [q["sql"] for q in queries.captured_queries if 'FROM "blog_post"' in q["sql"]
                  and "WITH own AS" not in q["sql"] and "blog_taggedpost" not in q["sql"]]
    assert len(post_loads) == 1, post_loads
    assert '"blog_post"."body",' not in post_loads[0]  # the Markdown source is not printed
    assert '"blog_post"."created_by_id"' not in post_loads[0]  # nor the editorial record
