"""Read endpoints: what each returns, and its filters (full stack through the Django test client)."""
import datetime

import pytest
from django.utils import timezone

from blog.factories import AuthorFactory, PostFactory
from digests.factories import (
    ActionItemFactory, DigestFactory, DigestReferenceFactory, FAQEntryFactory, ReferenceFactory,
    RepositoryFactory, TopicFactory,
)
from publishing.workflow import Status

pytestmark = pytest.mark.django_db


def items(response) -> list[dict]:
    assert response.status_code == 200, response.content
    return response.json()["items"]


def test_digest_detail_has_ordered_references_action_items_faq_html_and_markdown(client):
    digest = DigestFactory(summary="Shipped [2] and [1].", body="**Bold** <script>x()</script>")
    second = DigestReferenceFactory(digest=digest, number=2)
    first = DigestReferenceFactory(digest=digest, number=1)
    ActionItemFactory(digest=digest, position=2, text="Second", priority="plan")
    ActionItemFactory(digest=digest, position=1, text="First", priority="immediate")
    FAQEntryFactory(digest=digest, position=1, question="Why?", answer="Because.")

    data = client.get(f"/api/v1/digests/{digest.slug}").json()

    assert [c["number"] for c in data["references"]] == [1, 2]
    assert data["references"][0]["reference"]["id"] == first.reference_id
    assert data["references"][1]["reference"]["repository"] == second.reference.repository.full_name
    assert [i["text"] for i in data["action_items"]] == ["First", "Second"]
    assert data["faq"] == [{"position": 1, "question": "Why?", "answer": "Because."}]
    assert data["faq_is_generated"] is False
    assert data["body"] == "**Bold** <script>x()</script>"
    assert "<strong>Bold</strong>" in data["body_html"] and "<script>" not in data["body_html"]


def test_digest_detail_without_stored_faq_shows_the_generated_one(client):
    digest = DigestFactory()
    data = client.get(f"/api/v1/digests/{digest.slug}").json()
    assert data["faq_is_generated"] is True
    # no references and no action items: only "What changed" has an answer; empty answers are left out
    assert len(data["faq"]) == 1 and data["faq"][0]["question"].startswith("What changed in")
    assert all(entry["answer"] for entry in data["faq"])


def test_digest_list_filters(client):
    pytorch, other = TopicFactory(slug="pytorch", name="PyTorch"), TopicFactory(slug="other", name="Other")
    repo = RepositoryFactory(full_name="pytorch/torchtitan")
    cited = DigestFactory(topic=pytorch, date=datetime.date(2026, 3, 1))
    DigestReferenceFactory(digest=cited, reference=ReferenceFactory(repository=repo))
    urgent = DigestFactory(topic=other, date=datetime.date(2026, 3, 5))
    ActionItemFactory(digest=urgent, priority="immediate")
    DigestFactory(topic=other, date=datetime.date(2026, 4, 1))

    def slugs(query):
        return {d["slug"] for d in items(client.get(f"/api/v1/digests/?{query}"))}

    assert slugs("topic=pytorch") == {cited.slug}
    assert slugs("repository=PyTorch/TorchTitan") == {cited.slug}
    assert slugs("repository=nobody/nothing") == set()
    assert slugs("priority=immediate") == {urgent.slug}
    assert slugs("date_from=2026-03-02&date_to=2026-03-31") == {urgent.slug}


def test_lists_hide_unpublished_content_from_anonymous_clients(client):
    published = DigestFactory()
    DigestFactory(status=Status.DRAFT)
    DigestFactory(published_at=timezone.now() + datetime.timedelta(days=1))  # scheduled
    assert [d["slug"] for d in items(client.get("/api/v1/digests/"))] == [published.slug]
    PostFactory(status=Status.IN_REVIEW)
    post = PostFactory()
    assert [p["slug"] for p in items(client.get("/api/v1/posts/"))] == [post.slug]


def test_action_items_filter_by_repository_priority_topic_and_date(client):
    topic = TopicFactory(slug="pytorch")
    repo = RepositoryFactory(full_name="pytorch/torchtitan")
    digest = DigestFactory(topic=topic, date=datetime.date(2026, 5, 1))
    wanted = ActionItemFactory(digest=digest, repository=repo, priority="immediate")
    ActionItemFactory(digest=digest, repository=repo, priority="monitor")
    ActionItemFactory(priority="immediate")
    ActionItemFactory(digest=DigestFactory(status=Status.DRAFT), repository=repo, priority="immediate")

    found = items(client.get("/api/v1/action-items/?priority=immediate&repository=pytorch/torchtitan"))
    assert [item["id"] for item in found] == [wanted.pk]
    assert found[0]["digest"] == digest.slug and found[0]["topic"] == "pytorch"
    assert len(items(client.get("/api/v1/action-items/?topic=pytorch&date_from=2026-05-01&date_to=2026-05-01"))) == 2


def test_references_list_filters_and_detail_lists_citing_digests(client):
    repo = RepositoryFactory(full_name="pytorch/executorch")
    merged = ReferenceFactory(repository=repo, kind="pull_request", merged_at=timezone.now() - datetime.timedelta(days=3))
    commit = ReferenceFactory(repository=repo, kind="commit", merged_at=timezone.now())
    digest = DigestFactory()
    DigestReferenceFactory(digest=digest, reference=merged, number=1)
    DigestReferenceFactory(digest=digest, reference=commit, number=2)
    DigestReferenceFactory(digest=DigestFactory(status=Status.DRAFT), reference=merged, number=1)
    ReferenceFactory(repository=repo)  # cited by nobody: not published content

    def ids(query):
        return {r["id"] for r in items(client.get(f"/api/v1/references/?{query}"))}

    assert ids("repository=pytorch/executorch") == {merged.pk, commit.pk}
    assert ids("repository=PyTorch/ExecuTorch&kind=commit") == {commit.pk}  # any case, with other filters
    unknown = client.get("/api/v1/references/?repository=nobody/nothing").json()
    assert (unknown["items"], unknown["count"], unknown["next_cursor"]) == ([], 0, None)
    assert ids("kind=commit") == {commit.pk}
    since = (timezone.now() - datetime.timedelta(days=1)).isoformat()
    assert ids(f"merged_from={since.replace('+', '%2B')}") == {commit.pk}
    assert ids("cited=true") == {merged.pk, commit.pk}
    assert ids("cited=false") == set()

    detail = client.get(f"/api/v1/references/{merged.pk}").json()
    assert [(d["slug"], d["number"]) for d in detail["digests"]] == [(digest.slug, 1)]


def test_post_filters_all_tags_author_dates_and_text(client):
    ada = AuthorFactory(slug="ada")
    both = PostFactory(tags=["compilers", "pytorch"], authors=[ada], title="Inductor deep dive")
    PostFactory(tags=["pytorch"], title="Other")
    PostFactory(tags=["compilers"], published_at=timezone.now() - datetime.timedelta(days=40))

    def slugs(query):
        return {p["slug"] for p in items(client.get(f"/api/v1/posts/?{query}"))}

    assert slugs("tag=pytorch&tag=compilers") == {both.slug}
    assert slugs("author=ada") == {both.slug}
    assert slugs("q=deep%20dive") == {both.slug}
    recent = (timezone.now() - datetime.timedelta(days=10)).date().isoformat()
    assert len(slugs(f"date_from={recent}")) == 2


def test_post_filter_takes_the_non_ascii_tag_slugs_taggit_makes(client):
    from urllib.parse import quote

    cafe = PostFactory(tags=["café crème"])
    PostFactory(tags=["cafe"])
    response = client.get(f"/api/v1/posts/?tag={quote('café-crème')}")
    assert response.status_code == 200
    assert {p["slug"] for p in items(response)} == {cafe.slug}
    assert client.get("/api/v1/posts/?tag=caf%C3%A9%20cr%C3%A8me").status_code == 422  # a name, not a slug


def test_post_detail_has_ordered_authors_and_tags(client):
    first, second = AuthorFactory(name="Zed"), AuthorFactory(name="Amy")
    post = PostFactory(authors=[first, second], tags=["b", "a"])
    data = client.get(f"/api/v1/posts/{post.slug}").json()
    assert [a["name"] for a in data["authors"]] == ["Zed", "Amy"]
    assert data["tags"] == ["a", "b"]
    assert "<strong>Markdown</strong>" in data["body_html"]


def test_tags_carry_published_counts_only(client):
    PostFactory(tags=["common", "public"])
    PostFactory(tags=["common"])
    PostFactory(tags=["common", "secret"], status=Status.DRAFT)
    counts = {t["name"]: t["post_count"] for t in items(client.get("/api/v1/tags/"))}
    assert counts == {"common": 2, "public": 1}


def test_authors_topics_and_repositories_lists_show_only_published_ones(client):
    digest = DigestFactory(topic=TopicFactory(slug="seen"))
    DigestReferenceFactory(digest=digest, reference=ReferenceFactory(repository=RepositoryFactory(full_name="a/seen")))
    DigestFactory(topic=TopicFactory(slug="unseen"), status=Status.DRAFT)
    RepositoryFactory(full_name="a/unseen")
    author = AuthorFactory()
    PostFactory(authors=[author])
    PostFactory(authors=[AuthorFactory()], status=Status.DRAFT)

    assert [t["slug"] for t in items(client.get("/api/v1/topics/"))] == ["seen"]
    assert [r["full_name"] for r in items(client.get("/api/v1/repositories/"))] == ["a/seen"]
    assert [a["slug"] for a in items(client.get("/api/v1/authors/"))] == [author.slug]
