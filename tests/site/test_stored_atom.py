"""The posts' Atom feeds are written from stored renderings: the same document, a fixed number of queries."""
import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from blog.factories import AuthorFactory, PostFactory
from blog.feeds import PostsFeed

pytestmark = pytest.mark.django_db
FEEDS = ["/posts/feed.atom", "/tags/cuda/feed.atom", "/authors/ada/feed.atom"]


@pytest.fixture(autouse=True)
def cold(settings):
    settings.PAGE_CACHE_ENABLED = False


def make_posts(count: int) -> None:
    ada = AuthorFactory(name='Ada "A" <L> & co', slug="ada")
    for n in range(count):
        PostFactory(title=f'Post {n} & <friends> "quoted"', excerpt="An <i>excerpt</i> & more",
                    body=f"Jump to [the end](#end) & **bold** <b>raw</b>\n\n## End {n}",
                    disclosure="Drafted & edited", authors=[ada, AuthorFactory()], tags=["cuda", "r&d"])


@pytest.mark.parametrize("url", FEEDS)
def test_the_document_is_the_one_djangos_generic_writer_makes(client, monkeypatch, url):
    make_posts(3)
    stored = client.get(url)
    monkeypatch.setattr(PostsFeed, "stored_atom", False)
    generic = client.get(url)
    assert stored.status_code == generic.status_code == 200
    assert stored["Content-Type"] == generic["Content-Type"]
    assert stored["Last-Modified"] == generic["Last-Modified"]
    assert stored.content.decode() == generic.content.decode()
    assert stored.content.count(b"<entry>") == 3


@pytest.mark.parametrize("url", FEEDS)
def test_query_count_does_not_grow_with_entries(client, url):
    def queries() -> int:
        with CaptureQueriesContext(connection) as captured:
            assert client.get(url).status_code == 200
        return len(captured)

    make_posts(2)
    few = queries()
    make_posts(12)
    assert queries() == few
