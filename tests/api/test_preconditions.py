"""Writes honour If-Match (412 when the client's copy is stale); lists carry ETags and answer 304."""
import threading

import pytest
from django.db import connection
from django.test import Client

from blog.factories import AuthorFactory, PostFactory
from blog.models import Post
from digests.factories import DigestFactory, TopicFactory
from digests.models import Digest
from publishing.workflow import Status

from .conftest import bearer


@pytest.fixture
def token(editor, make_token):
    return make_token(editor, "write:content", "read:drafts")


def send(client, method: str, url: str, token: str, data=None, **headers):
    extra = {f"HTTP_{name.upper().replace('-', '_')}": value for name, value in headers.items()}
    return getattr(client, method)(url, data, content_type="application/json", **bearer(token), **extra)


def draft_post():
    return PostFactory(slug="on-compilers", status=Status.DRAFT, authors=[AuthorFactory(slug="ada")])


def read(client, url: str, token: str):
    """The JSON and ETag a client holds after a GET."""
    response = send(client, "get", url, token)
    assert response.status_code == 200
    return response.json(), response["ETag"]


@pytest.mark.django_db
@pytest.mark.parametrize("etag", ['"0000"', 'W/"0000"', '"made-up", "also-made-up"'])
def test_a_put_with_a_made_up_etag_is_refused_and_changes_nothing(client, token, etag):
    post = draft_post()
    data, _ = read(client, "/api/v1/posts/on-compilers", token)
    response = send(client, "put", "/api/v1/posts/on-compilers", token, {**data, "title": "Overwritten"}, if_match=etag)
    assert response.status_code == 412
    assert response.json() == {"detail": "Precondition failed: the object has changed since you read it. "
                                         "GET it again and send its new ETag in If-Match.", "errors": []}
    post.refresh_from_db()
    assert post.title != "Overwritten"


@pytest.mark.django_db
def test_a_put_with_the_current_etag_succeeds_and_answers_the_next_etag(client, token):
    draft_post()
    data, etag = read(client, "/api/v1/posts/on-compilers", token)
    response = send(client, "put", "/api/v1/posts/on-compilers", token, {**data, "title": "Revised"}, if_match=etag)
    assert response.status_code == 200, response.content
    assert response.json()["title"] == "Revised"
    after, etag_after = read(client, "/api/v1/posts/on-compilers", token)
    assert response["ETag"] == etag_after != etag
    assert response.content == send(client, "get", "/api/v1/posts/on-compilers", token).content
    assert response["Cache-Control"] == "private, no-store"


@pytest.mark.django_db
def test_a_stale_etag_is_refused_after_someone_else_wrote(client, token):
    draft_post()
    data, etag = read(client, "/api/v1/posts/on-compilers", token)
    assert send(client, "put", "/api/v1/posts/on-compilers", token, {**data, "title": "First"}, if_match=etag).status_code == 200
    second = send(client, "put", "/api/v1/posts/on-compilers", token, {**data, "title": "Second"}, if_match=etag)
    assert second.status_code == 412
    assert Post.objects.get().title == "First"


@pytest.mark.django_db
def test_without_if_match_or_with_a_star_a_put_still_writes(client, token):
    """If-Match is optional (docs/api.md): clients that do not send it keep last-writer-wins."""
    draft_post()
    data, _ = read(client, "/api/v1/posts/on-compilers", token)
    assert send(client, "put", "/api/v1/posts/on-compilers", token, {**data, "title": "No header"}).status_code == 200
    assert send(client, "put", "/api/v1/posts/on-compilers", token, {**data, "title": "Star"}, if_match="*").status_code == 200
    assert Post.objects.get().title == "Star"


@pytest.mark.django_db
def test_digest_puts_and_status_changes_honour_if_match_too(client, token, publisher, make_token):
    topic = TopicFactory(slug="pytorch", name="PyTorch")
    DigestFactory(topic=topic, slug="pytorch-2026-06-01", status=Status.DRAFT, summary="Nothing cited.", body="")
    data, etag = read(client, "/api/v1/digests/pytorch-2026-06-01", token)
    data["faq"] = []  # the generated FAQ is shown, not stored
    assert send(client, "put", "/api/v1/digests/pytorch-2026-06-01", token, {**data, "headline": "X"},
                if_match='"0000"').status_code == 412
    updated = send(client, "put", "/api/v1/digests/pytorch-2026-06-01", token, {**data, "headline": "New"}, if_match=etag)
    assert updated.status_code == 200, updated.content
    assert send(client, "post", "/api/v1/digests/pytorch-2026-06-01/submit", token, if_match=etag).status_code == 412
    publish = make_token(publisher, "publish", "read:drafts")
    refused = send(client, "post", "/api/v1/digests/pytorch-2026-06-01/status", publish, {"status": "published"},
                   if_match=etag)
    assert refused.status_code == 412
    assert Digest.objects.get().status == Status.DRAFT
    accepted = send(client, "post", "/api/v1/digests/pytorch-2026-06-01/status", publish, {"status": "published"},
                    if_match=updated["ETag"])
    assert accepted.status_code == 200, accepted.content


@pytest.mark.skipif(connection.vendor != "postgresql",
                    reason="row locks (SELECT ... FOR UPDATE) are what serialise the race; SQLite has none to test")
@pytest.mark.django_db(transaction=True)
def test_two_clients_racing_with_the_same_etag_one_wins_one_gets_412(editor, make_token):
    token = make_token(editor, "write:content", "read:drafts")
    draft_post()
    data, etag = read(Client(), "/api/v1/posts/on-compilers", token)
    start, statuses = threading.Barrier(2), {}

    def write(title: str) -> None:
        try:
            start.wait()
            response = send(Client(), "put", "/api/v1/posts/on-compilers", token, {**data, "title": title}, if_match=etag)
            statuses[title] = response.status_code
        finally:
            connection.close()  # each thread's own connection

    threads = [threading.Thread(target=write, args=(title,)) for title in ("Alice's", "Bob's")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert sorted(statuses.values()) == [200, 412]
    winner = next(title for title, status in statuses.items() if status == 200)
    assert Post.objects.get().title == winner


@pytest.mark.django_db
@pytest.mark.parametrize("url", ["/api/v1/posts/", "/api/v1/digests/", "/api/v1/tags/", "/api/v1/authors/"])
def test_lists_carry_an_etag_and_answer_304_until_they_change(client, url):
    PostFactory(status=Status.PUBLISHED, tags=["compilers"], authors=[AuthorFactory()])
    DigestFactory(status=Status.PUBLISHED)
    first = client.get(url)
    assert first.status_code == 200 and first["ETag"]
    again = client.get(url, HTTP_IF_NONE_MATCH=first["ETag"])
    assert again.status_code == 304 and again.content == b""
    assert again["ETag"] == first["ETag"]
    PostFactory(status=Status.PUBLISHED, tags=["compilers"], authors=[AuthorFactory()])
    DigestFactory(status=Status.PUBLISHED)
    changed = client.get(url, HTTP_IF_NONE_MATCH=first["ETag"])
    assert changed.status_code == 200 and changed["ETag"] != first["ETag"]
