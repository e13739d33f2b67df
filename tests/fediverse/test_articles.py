"""Posts and digests as Articles, the outboxes and the fediverse:creator meta."""
import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from blog.factories import AuthorFactory, PostFactory
from blog.models import Author
from digests.factories import DigestFactory, TopicFactory

pytestmark = pytest.mark.django_db
AS = "application/activity+json"
PUBLIC = "https://www.w3.org/ns/activitystreams#Public"


def test_a_post_as_an_article(client):
    author = AuthorFactory(handle="ezyang", slug="ed")
    post = PostFactory(authors=[author, AuthorFactory(handle="", slug="anon")], tags=["compilers"],
                       excerpt="The gist.", body="See [the list](/posts/) and ![x](/media/x.png).")
    article = client.get(post.get_absolute_url(), headers={"accept": AS}).json()
    url = "http://testserver" + post.get_absolute_url()
    assert article["type"] == "Article" and article["id"] == article["url"] == url
    assert article["name"] == post.title and article["summary"] == "The gist."
    assert 'href="http://testserver/posts/"' in article["content"]
    assert article["attributedTo"] == ["http://testserver/ap/actors/ezyang", "http://testserver/ap/actors/blog"]
    assert article["to"] == [PUBLIC]
    assert article["cc"] == ["http://testserver/ap/actors/ezyang/followers", "http://testserver/ap/actors/blog/followers"]
    assert article["tag"] == [{"type": "Hashtag", "name": "#compilers", "href": "http://testserver/tags/compilers/"}]
    assert article["published"] and article["updated"]


def test_a_digest_as_an_article(client):
    digest = DigestFactory(topic=TopicFactory(slug="pytorch"), summary="Something **shipped**.")
    article = client.get(digest.get_absolute_url(), headers={"accept": AS}).json()
    assert article["name"] == digest.headline and article["summary"] == "Something shipped."
    assert "<strong>shipped</strong>" in article["content"]
    assert article["attributedTo"] == ["http://testserver/ap/actors/wire", "http://testserver/ap/actors/pytorch"]


def test_outbox_pages_newest_first(client):
    author = AuthorFactory(handle="ezyang")
    posts = [PostFactory(authors=[author]) for _ in range(23)]
    collection = client.get("/ap/actors/ezyang/outbox").json()
    assert collection["type"] == "OrderedCollection" and collection["totalItems"] == 23
    first = client.get(collection["first"]).json()
    assert first["type"] == "OrderedCollectionPage" and len(first["orderedItems"]) == 20
    assert first["orderedItems"][0]["type"] == "Create"
    assert first["orderedItems"][0]["object"]["id"].endswith(posts[-1].get_absolute_url())
    second = client.get(first["next"]).json()
    assert len(second["orderedItems"]) == 3 and "next" not in second
    seen = [item["object"]["id"] for item in first["orderedItems"] + second["orderedItems"]]
    assert len(set(seen)) == 23
    assert client.get("/ap/actors/ezyang/outbox?cursor=forged").status_code == 404
    assert client.get("/ap/actors/ezyang/outbox?page=x").status_code == 404


def test_topic_outbox_lists_only_its_digests(client):
    topic = TopicFactory(slug="pytorch")
    DigestFactory(topic=topic)
    DigestFactory()
    assert client.get("/ap/actors/pytorch/outbox").json()["totalItems"] == 1
    assert client.get("/ap/actors/wire/outbox").json()["totalItems"] == 2


def outbox_queries(client, handle: str) -> int:
    with CaptureQueriesContext(connection) as captured:
        assert client.get(f"/ap/actors/{handle}/outbox?page=1").status_code == 200
    return len(captured)


@pytest.mark.parametrize("handle", ["blog", "wire", "ezyang", "pytorch"])
def test_outbox_queries_do_not_grow_with_the_data(client, handle):
    author, topic = AuthorFactory(handle="ezyang"), TopicFactory(slug="pytorch")

    def add(n):
        for index in range(n):
            PostFactory(authors=[author, AuthorFactory()], tags=[f"tag{index}", "common"])
            DigestFactory(topic=topic)

    add(3)
    few = outbox_queries(client, handle)
    add(15)
    assert outbox_queries(client, handle) == few


def test_post_pages_credit_authors_fediverse_addresses(client):
    credited = AuthorFactory(handle="a", fediverse_address="@ezyang@mastodon.social")
    post = PostFactory(authors=[credited, AuthorFactory(handle="b")])
    page = client.get(post.get_absolute_url()).content.decode()
    assert page.count('name="fediverse:creator"') == 1
    assert '<meta name="fediverse:creator" content="@ezyang@mastodon.social">' in page


@pytest.mark.parametrize("address,valid", [("@ezyang@mastodon.social", True), ("ezyang@mastodon.social", False),
                                           ("@ezyang", False), ('@x@a.b"><script>', False), ("@a@b", False)])
def test_the_fediverse_address_is_validated(address, valid):
    author = Author(name="X", slug="x", fediverse_address=address)
    if valid:
        author.full_clean()
    else:
        with pytest.raises(Exception, match="fediverse address"):
            author.full_clean()


def test_a_handle_stored_before_handles_were_checked_names_no_actor_and_breaks_no_page(client):
    """"a/b" fits no /ap/actors/<handle> path: the Article and the outbox left it out instead of a 500."""
    from blog.factories import AuthorFactory, PostFactory

    author = AuthorFactory(handle="a/b", slug="ab", name="A B")
    post = PostFactory(authors=[author])
    article = client.get(post.get_absolute_url(), HTTP_ACCEPT="application/activity+json")
    assert article.status_code == 200
    assert not any("a/b" in actor for actor in article.json()["attributedTo"])
    outbox = client.get("/ap/actors/blog/outbox").json()
    assert client.get(outbox["first"]).json()["orderedItems"][0]["object"]["id"] == article.json()["id"]
