"""WebFinger, host-meta, NodeInfo and the actor documents (issue 38, read-only part)."""
import json

import pytest
from django.core.exceptions import ValidationError
from django.db import connection
from django.test.utils import CaptureQueriesContext

from blog.factories import AuthorFactory, PostFactory
from digests.factories import DigestFactory, TopicFactory
from fediverse import handles
from fediverse.models import ActorKey
from publishing.workflow import Status
from tests.perf.test_caching import page_cache_on
from tests.site.hostile import CORPUS, live_markup

pytestmark = pytest.mark.django_db
AS = "application/activity+json"
LD = 'application/ld+json; profile="https://www.w3.org/ns/activitystreams"'


@pytest.fixture
def content():
    author = AuthorFactory(handle="ezyang", slug="ed", name="Ed")
    post = PostFactory(authors=[author], tags=["compilers"], body="See [docs](/posts/) and **more**.")
    digest = DigestFactory(topic=TopicFactory(slug="pytorch", name="PyTorch"))
    return author, post, digest


def finger(client, resource):
    return client.get("/.well-known/webfinger", {"resource": resource})


@pytest.mark.parametrize("resource", ["acct:wire@testserver", "http://testserver/wire/",
                                      "http://testserver/ap/actors/wire"])
def test_webfinger_finds_the_wire_by_acct_and_by_url(client, resource):
    response = finger(client, resource)
    assert response.status_code == 200
    assert response["Access-Control-Allow-Origin"] == "*"
    assert response["Content-Type"].startswith("application/jrd+json")
    links = {link["rel"]: link for link in response.json()["links"]}
    assert links["self"] == {"rel": "self", "type": AS, "href": "http://testserver/ap/actors/wire"}
    assert links["http://webfinger.net/rel/profile-page"]["href"] == "http://testserver/wire/"
    assert response.json()["subject"] == "acct:wire@testserver"


def test_webfinger_finds_topics_and_authors(client, content):
    assert finger(client, "acct:pytorch@testserver").json()["links"][0]["href"].endswith("/ap/actors/pytorch")
    assert finger(client, "http://testserver/authors/ed/").json()["subject"] == "acct:ezyang@testserver"
    assert finger(client, "acct:EZYANG@testserver").status_code == 200


@pytest.mark.parametrize("resource,status", [
    ("acct:nobody@testserver", 404), ("http://testserver/tags/", 404), ("", 400), ("wire", 400),
    ("acct:wire@elsewhere.example", 400), ("acct:@testserver", 400), ("http://elsewhere.example/wire/", 400),
    ("mailto:wire@testserver", 400), ("acct:wire", 400),
])
def test_webfinger_refuses_precisely(client, resource, status):
    response = finger(client, resource)
    assert response.status_code == status
    assert response["Access-Control-Allow-Origin"] == "*"


def test_a_draft_only_topic_is_no_actor(client):
    DigestFactory(topic=TopicFactory(slug="secret"), status=Status.DRAFT)
    assert finger(client, "acct:secret@testserver").status_code == 404
    assert client.get("/ap/actors/secret", headers={"accept": AS}).status_code == 404


def test_host_meta_and_nodeinfo(client, content):
    meta = client.get("/.well-known/host-meta")
    assert meta.status_code == 200 and "application/xrd+xml" in meta["Content-Type"]
    assert 'template="http://testserver/.well-known/webfinger?resource={uri}"' in meta.content.decode()
    links = client.get("/.well-known/nodeinfo").json()["links"]
    assert links == [{"rel": "http://nodeinfo.diaspora.software/ns/schema/2.1", "href": "http://testserver/nodeinfo/2.1"}]
    info = client.get("/nodeinfo/2.1").json()
    assert info["software"]["name"] == "repojournal" and info["protocols"] == ["activitypub"]
    assert info["usage"]["localPosts"] == 2


@pytest.mark.parametrize("handle,kind", [("wire", "Service"), ("blog", "Service"), ("pytorch", "Service"),
                                         ("ezyang", "Person")])
def test_each_actor_kind_has_a_document_with_one_key_made_once(client, content, handle, kind):
    first = client.get(f"/ap/actors/{handle}", headers={"accept": AS})
    assert first.status_code == 200 and first["Content-Type"] == AS
    actor = first.json()
    own = f"http://testserver/ap/actors/{handle}"
    assert actor["id"] == own and actor["type"] == kind and actor["preferredUsername"] == handle
    assert actor["inbox"] == own + "/inbox" and actor["outbox"] == own + "/outbox"
    assert actor["followers"] == own + "/followers"
    assert actor["endpoints"]["sharedInbox"] == "http://testserver/inbox"
    assert actor["publicKey"]["owner"] == own and "BEGIN PUBLIC KEY" in actor["publicKey"]["publicKeyPem"]
    assert actor["discoverable"] is actor["indexable"] is True
    assert {"name", "summary", "icon", "url", "published", "@context"} <= set(actor)
    again = client.get(f"/ap/actors/{handle}").json()
    assert again["publicKey"] == actor["publicKey"]
    assert ActorKey.objects.filter(handle=handle).count() == 1
    assert "PRIVATE" not in first.content.decode()


def test_staff_roles_cannot_open_the_keys(client, editor, publisher):
    client.get("/ap/actors/wire")
    key = ActorKey.objects.get(handle="wire")
    for user in (editor, publisher):
        client.force_login(user)
        response = client.get(f"/admin/fediverse/actorkey/{key.pk}/change/")
        assert response.status_code in (302, 403) and b"PRIVATE" not in response.content


def test_the_private_key_is_never_shown(admin_client, client, content):
    client.get("/ap/actors/wire")
    key = ActorKey.objects.get(handle="wire")
    assert "PRIVATE KEY" in key.private_key_pem
    page = admin_client.get(f"/admin/fediverse/actorkey/{key.pk}/change/").content.decode()
    assert "BEGIN PUBLIC KEY" in page and "PRIVATE" not in page
    assert "PRIVATE" not in admin_client.get("/admin/fediverse/actorkey/").content.decode()
    assert key.private_key_pem not in repr(key) + str(key)


def test_the_private_key_cannot_be_guessed_through_the_lists_filters(admin_client, client):
    """A filter in the URL would tell, by the count of rows, whether each guessed character is right."""
    client.get("/ap/actors/wire")
    prefix = ActorKey.objects.get(handle="wire").private_key_pem[:40]
    response = admin_client.get("/admin/fediverse/actorkey/", {"private_key_pem__startswith": prefix})
    assert response.status_code == 400 and prefix.encode() not in response.content


def test_behind_cloudflare_pages_are_not_negotiated(client, content, settings):
    """Cloudflare keys its cache by URL and ignores Vary: the page's URL answers HTML to everyone."""
    settings.EDGE_PURGE_BACKEND = "cloudflare"
    response = client.get("/wire/", HTTP_ACCEPT=AS)
    assert response.status_code == 200 and response["Content-Type"].startswith("text/html")
    assert "Accept" not in response.get("Vary", "")
    assert client.get("/ap/actors/wire", HTTP_ACCEPT=AS)["Content-Type"].startswith("application/activity+json")


def test_unknown_actor_and_collections_are_404(client):
    for path in ("/ap/actors/nobody", "/ap/actors/nobody/outbox", "/ap/actors/nobody/followers"):
        assert client.get(path).status_code == 404


def test_followers_is_a_count_only(client):
    body = client.get("/ap/actors/wire/followers").json()
    assert body["totalItems"] == 0 and "orderedItems" not in body and "first" not in body


@pytest.mark.parametrize("handle", ["admin", "api", "inbox", "well-known", "Static", "media", "wire", "blog"])
def test_reserved_and_fixed_handles_are_refused(handle):
    with pytest.raises(ValidationError):
        handles.check_handle(handle)


def test_handles_are_unique_across_topics_and_authors(content):
    author, _post, digest = content
    with pytest.raises(ValidationError, match="topic"):
        handles.check_handle("pytorch", instance=author)
    with pytest.raises(ValidationError, match="author"):
        handles.check_handle("ezyang", instance=digest.topic)
    handles.check_handle("ezyang", instance=author)  # its own handle
    handles.check_handle("pytorch", instance=digest.topic)


def test_the_system_check_names_existing_clashes(content):
    from fediverse.checks import handle_clashes

    AuthorFactory(handle="pytorch", slug="py", name="Py")
    AuthorFactory(handle="admin", slug="ad", name="Ad")
    problems = [message.msg for message in handle_clashes(databases=["default"])]
    assert any("pytorch" in problem and "Py" in problem for problem in problems)
    assert any("admin" in problem and "reserved" in problem for problem in problems)


def test_the_admin_refuses_a_clash(publisher, client, content):
    client.force_login(publisher)
    response = client.post("/admin/digests/topic/add/", {
        "name": "Ed's topic", "slug": "ezyang", "description": "",
        "repositories-TOTAL_FORMS": 0, "repositories-INITIAL_FORMS": 0})
    assert response.status_code == 200 and "already the fediverse handle" in response.content.decode()
    author = content[0]
    response = client.get(f"/admin/blog/author/{author.pk}/change/")
    assert "fediverse_address" in response.content.decode()


def test_the_author_admin_refuses_a_reserved_handle(publisher, client):
    client.force_login(publisher)
    response = client.post("/admin/blog/author/add/", {"name": "X", "handle": "inbox", "slug": "x", "bio": ""})
    assert response.status_code == 200 and "reserved" in response.content.decode()


@pytest.fixture(params=["locmem", "redis"])
def page_cache(request, settings):
    """The page cache on, on the local-memory cache and on a real Redis (as tests/perf/test_caching.py)."""
    yield from page_cache_on(request, settings)


@pytest.mark.parametrize("path", ["/wire/", "/posts/", "/topics/pytorch/", "/authors/ed/", "post", "digest"])
def test_negotiation_never_swaps_html_and_json_with_the_page_cache_on(client, content, page_cache, path):
    _author, post, digest = content
    path = {"post": post.get_absolute_url(), "digest": digest.get_absolute_url()}.get(path, path)
    for accept in (AS, LD, "text/html", AS):  # JSON first, HTML cached, then JSON again
        response = client.get(path, headers={"accept": accept})
        assert response.status_code == 200
        assert "Accept" in response["Vary"]
        if accept == "text/html":
            assert response["Content-Type"].startswith("text/html")
        else:
            assert response["Content-Type"] == AS
            assert json.loads(response.content)["id"]
    html = client.get(path, headers={"accept": "text/html"})
    assert html["X-Page-Cache"] == "hit" and "Accept" in html["Vary"]
    assert html["Content-Type"].startswith("text/html")


def test_the_json_carries_the_html_pages_surrogate_keys(client, content):
    _author, post, digest = content
    for path in (post.get_absolute_url(), digest.get_absolute_url(), "/topics/pytorch/"):
        html = client.get(path)["Surrogate-Key"].split()
        activity = client.get(path, headers={"accept": AS})["Surrogate-Key"].split()
        assert activity and set(activity) <= set(html)
        assert any(key.startswith(("post-", "digest-", "topic-")) for key in activity)


def test_drafts_and_scheduled_are_404_as_json(client):
    draft = PostFactory(status=Status.DRAFT)
    assert client.get(draft.get_absolute_url(), headers={"accept": AS}).status_code == 404
    digest = DigestFactory(status=Status.DRAFT)
    assert client.get(digest.get_absolute_url(), headers={"accept": AS}).status_code == 404


def test_an_author_without_a_handle_is_no_actor(client):
    author = AuthorFactory(handle="", slug="nohandle")
    PostFactory(authors=[author])
    assert client.get("/authors/nohandle/", headers={"accept": AS}).status_code == 404
    assert client.get("/authors/nohandle/").status_code == 200


def test_hostile_text_stays_harmless_in_articles(client):
    post = PostFactory(body="\n\n".join(CORPUS), title="<script>alert(1)</script>")
    article = client.get(post.get_absolute_url(), headers={"accept": AS}).json()
    assert live_markup(article["content"]) == []
    assert article["name"] == "<script>alert(1)</script>"  # a plain-text field: JSON, not HTML
    digest = DigestFactory(summary="\n\n".join(CORPUS), body="\n\n".join(CORPUS))
    assert live_markup(client.get(digest.get_absolute_url(), headers={"accept": AS}).json()["content"]) == []


def test_an_author_whose_handle_a_topic_holds_is_not_given_the_topics_actor(client, content):
    PostFactory(authors=[AuthorFactory(handle="pytorch", slug="py")])  # written before the admin refused it
    assert finger(client, "http://testserver/authors/py/").status_code == 404
    assert client.get("/authors/py/", headers={"accept": AS}).status_code == 404
    assert client.get("/ap/actors/pytorch").json()["url"] == "http://testserver/topics/pytorch/"
