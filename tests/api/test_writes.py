"""Writing drafts with a token: same shape as the detail, same rules as the admin, recorded in history."""
import datetime

import pytest
from reversion.models import Version

from accounts.models import ApiToken
from blog.factories import AuthorFactory, PostFactory
from blog.models import Author, Post
from digests.factories import DigestFactory, ReferenceFactory, RepositoryFactory, TopicFactory
from digests.models import Digest, Reference, Repository
from publishing.workflow import Status

from .conftest import bearer

pytestmark = pytest.mark.django_db


def digest_json(**overrides) -> dict:
    data = {
        "topic": {"slug": "pytorch"},
        "date": "2026-06-01",
        "headline": "Torchtitan lands float8 [1]",
        "summary": "Float8 training landed [1] and a fix [2].",
        "body": "More **detail** <script>alert(1)</script> [ref:2].",
        "references": [
            {"number": 1, "reference": {"repository": "pytorch/torchtitan", "kind": "pull_request", "key": "101", "title": "Float8", "number": 101}},
            {"number": 2, "reference": {"repository": "pytorch/torchtitan", "kind": "commit", "key": "abc123", "title": "Fix"}},
        ],
        "action_items": [{"position": 1, "text": "Try float8", "repository": "pytorch/torchtitan", "priority": "immediate"}],
        "faq": [{"position": 1, "question": "What?", "answer": "Float8."}],
    }
    data.update(overrides)
    return data


@pytest.fixture
def wire():
    topic = TopicFactory(slug="pytorch", name="PyTorch")
    RepositoryFactory(full_name="pytorch/torchtitan", topic=topic)
    return topic


@pytest.fixture
def writer(client, editor, make_token):
    headers = bearer(make_token(editor, "write:content", "read:drafts"))

    def send(method: str, url: str, data=None):
        return getattr(client, method)(url, data, content_type="application/json", **headers)

    return send


def test_create_a_draft_digest_that_an_editor_sees_in_the_admin(wire, writer, client, editor):
    response = writer("post", "/api/v1/digests/", digest_json())
    assert response.status_code == 201, response.content
    data = response.json()
    assert data["status"] == "draft" and data["slug"] == "pytorch-2026-06-01"
    assert [c["reference"]["key"] for c in data["references"]] == ["101", "abc123"]
    assert "<script>" not in data["body_html"] and "<strong>detail</strong>" in data["body_html"]
    assert data["action_items"][0]["repository"] == "pytorch/torchtitan"
    assert data["faq"] == [{"position": 1, "question": "What?", "answer": "Float8."}]

    digest = Digest.objects.get()
    versions = Version.objects.get_for_object(digest)
    assert versions.count() == 1 and versions[0].revision.user == editor
    assert "API" in versions[0].revision.comment

    client.force_login(editor)
    changelist = client.get("/admin/digests/digest/")
    assert "Torchtitan lands float8" in changelist.content.decode()


def test_existing_references_are_attached_not_duplicated(wire, writer):
    existing = ReferenceFactory(repository=Repository.objects.get(), kind="pull_request", key="101", title="Kept")
    assert writer("post", "/api/v1/digests/", digest_json()).status_code == 201
    assert Reference.objects.count() == 2
    existing.refresh_from_db()
    assert existing.title == "Kept" and existing.citations.count() == 1


def test_detail_json_round_trips_through_put(wire, writer):
    created = writer("post", "/api/v1/digests/", digest_json()).json()
    created["headline"] = "Edited headline"
    updated = writer("put", f"/api/v1/digests/{created['slug']}", created)
    assert updated.status_code == 200, updated.content
    after = updated.json()
    assert after["headline"] == "Edited headline"
    for key in ("references", "action_items", "faq", "summary", "body", "topic"):
        assert after[key] == created[key] or key == "references" and [
            (c["number"], c["reference"]["id"]) for c in after[key]
        ] == [(c["number"], c["reference"]["id"]) for c in created[key]]
    assert Version.objects.get_for_object(Digest.objects.get()).count() == 2


@pytest.mark.parametrize(
    "overrides, field, message",
    [
        ({"summary": "Cites [7]."}, "body.references", "[7]"),
        ({"topic": {"slug": "nope"}}, "body.topic.slug", "Unknown topic"),
        ({"references": [{"number": 1, "reference": {"repository": "ghost/repo", "kind": "issue", "key": "1", "title": "t"}}], "summary": "[1]", "body": ""},
         "body.references.0.reference.repository", "create it first"),
        ({"references": [{"number": 1, "reference": {"repository": "pytorch/torchtitan", "kind": "issue", "key": "9"}}], "summary": "[1]", "body": ""},
         "body.references.0.reference.title", "title is required"),
        ({"action_items": [{"text": "x", "repository": "ghost/repo"}]}, "body.action_items.0.repository", "Unknown repository"),
        ({"references": [
            {"number": 1, "reference": {"repository": "pytorch/torchtitan", "kind": "issue", "key": "1", "title": "a"}},
            {"number": 1, "reference": {"repository": "pytorch/torchtitan", "kind": "issue", "key": "2", "title": "b"}}],
          "summary": "[1]", "body": ""}, "body.references", "more than one reference"),
        ({"headline": ""}, "body.headline", "at least 1"),
        ({"date": "2026-02-31"}, "body.date", "date"),
        ({"references": [{"number": 1, "reference": {"repository": "pytorch/torchtitan", "kind": "issue", "key": "1", "title": "t", "url": "javascript:alert(1)"}}], "summary": "[1]", "body": ""},
         "body.references.0.reference.url", "http"),
    ],
)
def test_invalid_digests_are_refused_with_field_paths(wire, writer, overrides, field, message):
    response = writer("post", "/api/v1/digests/", digest_json(**overrides))
    assert response.status_code == 422, response.content
    errors = {e["field"]: e["message"] for e in response.json()["errors"]}
    assert field in errors and message.lower() in errors[field].lower(), errors
    assert not Digest.objects.exists()


def test_one_digest_per_topic_and_day(wire, writer):
    assert writer("post", "/api/v1/digests/", digest_json()).status_code == 201
    again = writer("post", "/api/v1/digests/", digest_json(slug="another-slug"))
    assert again.status_code == 422
    assert again.json()["errors"][0]["field"] == "body.date"


def test_repositories_are_created_explicitly_then_cited(wire, writer):
    data = digest_json(references=[{"number": 1, "reference": {"repository": "pytorch/ao", "kind": "issue", "key": "5", "title": "t"}}],
                       summary="[1]", body="", action_items=[])
    assert writer("post", "/api/v1/digests/", data).status_code == 422
    created = writer("post", "/api/v1/repositories/", {"full_name": "pytorch/ao", "topic": "pytorch"})
    assert created.status_code == 201 and created.json()["url"] == "https://github.com/pytorch/ao"
    assert writer("post", "/api/v1/repositories/", {"full_name": "PyTorch/AO"}).status_code == 422
    assert writer("post", "/api/v1/digests/", data).status_code == 201


def test_submit_for_review_then_editor_can_no_longer_edit_once_published(wire, writer):
    slug = writer("post", "/api/v1/digests/", digest_json()).json()["slug"]
    submitted = writer("post", f"/api/v1/digests/{slug}/submit")
    assert submitted.status_code == 200 and submitted.json()["status"] == "in_review"
    Digest.objects.filter(slug=slug).update(status=Status.PUBLISHED)
    refused = writer("put", f"/api/v1/digests/{slug}", digest_json())
    assert refused.status_code == 403 and "Publishers" in refused.json()["detail"]


def test_publish_needs_the_scope_and_a_publisher(client, editor, publisher):
    digest = DigestFactory(status=Status.IN_REVIEW)
    url, body = f"/api/v1/digests/{digest.slug}/status", {"status": "published"}

    def post(user, *scopes):
        token, raw = ApiToken.issue(user, "t", scopes)  # bypasses the admin's check on purpose
        return client.post(url, body, content_type="application/json", **bearer(raw))

    assert post(publisher, "write:content").status_code == 403
    assert post(editor, "publish").status_code == 403  # the scope alone does not make an editor a Publisher
    digest.refresh_from_db()
    assert digest.status == Status.IN_REVIEW
    published = post(publisher, "publish")
    assert published.status_code == 200 and published.json()["status"] == "published"
    assert Version.objects.get_for_object(digest).first().revision.user == publisher


def test_scheduling_sets_published_at(client, publisher, make_token):
    digest = DigestFactory(status=Status.IN_REVIEW, published_at=None)
    when = "2030-01-01T09:00:00Z"
    response = client.post(f"/api/v1/digests/{digest.slug}/status", {"status": "published", "published_at": when},
                           content_type="application/json", **bearer(make_token(publisher, "publish")))
    assert response.status_code == 200
    digest.refresh_from_db()
    assert digest.is_scheduled and digest.published_at == datetime.datetime(2030, 1, 1, 9, tzinfo=datetime.timezone.utc)


def test_publishing_a_digest_with_a_broken_citation_is_refused(client, publisher, make_token):
    digest = DigestFactory(status=Status.IN_REVIEW, summary="Cites [3].")
    response = client.post(f"/api/v1/digests/{digest.slug}/status", {"status": "published"},
                           content_type="application/json", **bearer(make_token(publisher, "publish")))
    assert response.status_code == 403 and "[3]" in response.json()["detail"]


def test_posts_create_update_submit(writer, editor):
    ada = AuthorFactory(slug="ada")
    body = {"title": "On compilers", "slug": "on-compilers", "body": "Hello <img src=x onerror=alert(1)>",
            "authors": [{"slug": "ada"}], "tags": ["Compilers", "pytorch"]}
    created = writer("post", "/api/v1/posts/", body)
    assert created.status_code == 201, created.content
    data = created.json()
    assert data["status"] == "draft" and data["authors"][0]["slug"] == "ada" and data["tags"] == ["Compilers", "pytorch"]
    assert "onerror" not in data["body_html"]
    data["title"] = "On compilers, revised"
    assert writer("put", "/api/v1/posts/on-compilers", data).json()["title"] == "On compilers, revised"
    assert writer("post", "/api/v1/posts/on-compilers/submit").json()["status"] == "in_review"
    post = Post.objects.get()
    assert list(post.authors.all()) == [ada]
    assert Version.objects.get_for_object(post).first().revision.user == editor


def test_post_authors_must_exist_and_are_created_explicitly(writer):
    body = {"title": "T", "slug": "t", "body": "B", "authors": [{"slug": "newbie"}]}
    refused = writer("post", "/api/v1/posts/", body)
    assert refused.status_code == 422 and refused.json()["errors"][0]["field"] == "body.authors.0.slug"
    assert writer("post", "/api/v1/authors/", {"slug": "newbie", "name": "New Bie"}).status_code == 201
    assert writer("post", "/api/v1/posts/", body).status_code == 201
    assert writer("post", "/api/v1/posts/", body).json()["errors"][0]["field"] == "body.slug"


@pytest.mark.parametrize(("handle", "says"), [("admin", "reserved"), ("wire", "already the fediverse handle"),
                                              ("a/b", "cannot name a fediverse account")])
def test_an_author_handle_no_fediverse_account_can_have_is_refused(writer, handle, says):
    """One namespace of handles (issue 38): the API refuses what the admin refuses; "a/b" made a 500 of pages."""
    refused = writer("post", "/api/v1/authors/", {"slug": "newbie", "name": "New Bie", "handle": handle})
    assert refused.status_code == 422
    error = refused.json()["errors"][0]
    assert error["field"] == "body.handle" and says in error["message"]
    assert not Author.objects.filter(slug="newbie").exists()


def test_a_tag_name_without_letters_or_digits_is_refused_and_nothing_is_stored(writer):
    """Such a name has no slug, so its tag could have no page (found by schemathesis: it was a 500)."""
    body = {"title": "T", "slug": "t", "body": "B", "tags": ["fine", "!?"]}
    refused = writer("post", "/api/v1/posts/", body)
    assert refused.status_code == 422
    error = refused.json()["errors"][0]
    assert error["field"] == "body.tags.1" and "letter or digit" in error["message"]
    assert not Post.objects.exists()
    body["tags"] = ["fine", "ùûæ"]
    assert writer("post", "/api/v1/posts/", body).status_code == 201


def test_editor_cannot_change_a_published_post(writer):
    post = PostFactory()
    data = {"title": "Hijack", "slug": post.slug, "body": "x"}
    assert writer("put", f"/api/v1/posts/{post.slug}", data).status_code == 403


def test_malformed_json_is_a_400_in_the_error_shape(client, editor, make_token):
    response = client.post("/api/v1/digests/", "{not json", content_type="application/json",
                           **bearer(make_token(editor, "write:content")))
    assert response.status_code in (400, 422)
    assert response.json()["detail"]


def test_a_generated_faq_read_back_is_not_stored(wire, writer):
    created = writer("post", "/api/v1/digests/", digest_json(faq=[])).json()
    assert created["faq_is_generated"] is True and len(created["faq"]) == 3
    again = writer("put", f"/api/v1/digests/{created['slug']}", created).json()
    assert again["faq_is_generated"] is True
    assert not Digest.objects.get().faq_entries.exists()


def test_a_token_never_grants_more_than_its_user_may_do(client, django_user_model, wire):
    outsider = django_user_model.objects.create_user("outsider", password="pw")
    raw = ApiToken.issue(outsider, "t", ["write:content"])[1]
    response = client.post("/api/v1/digests/", digest_json(), content_type="application/json", **bearer(raw))
    assert response.status_code == 403 and "permission" in response.json()["detail"]
    assert not Digest.objects.exists()


def test_an_oversized_body_is_a_400_in_the_error_shape(writer, settings):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 1000
    response = writer("post", "/api/v1/posts/", {"title": "T", "slug": "t", "body": "x" * 2000})
    assert response.status_code == 400
    assert "exceeded" in response.json()["detail"]
