"""Edit conflicts on digests (citations, action items, FAQ), through the API, and on the admins of
authors, topics, repositories and images (issue 37). Helpers: ``test_edit_conflicts``."""
import pytest

from accounts.models import ApiToken
from blog.factories import AuthorFactory
from blog.models import Author, Post
from digests.factories import (
    ActionItemFactory, DigestFactory, DigestReferenceFactory, FAQEntryFactory, ReferenceFactory, RepositoryFactory,
    TopicFactory,
)
from digests.models import ActionItem, Digest, DigestReference, FAQEntry, Repository, Topic
from images.models import Image
from publishing.edit_conflicts import RESOLVE
from publishing.workflow import Status

from .test_edit_conflicts import ada, change_url, post, save, signed_in  # noqa: F401 -- fixtures

pytestmark = pytest.mark.django_db


@pytest.fixture
def digest():
    digest = DigestFactory(status=Status.DRAFT, published_at=None, summary="Shipped [1].", body="")
    DigestReferenceFactory(digest=digest, number=1)
    ActionItemFactory(digest=digest, text="Upgrade", position=0)
    FAQEntryFactory(digest=digest, question="Why?", answer="Because.", position=0)
    return digest


def test_a_redraft_adding_references_under_an_open_form_keeps_both(digest, ada, admin_form_data):
    b = signed_in(ada)
    page = b.get(change_url(digest))
    DigestReferenceFactory(digest=digest, number=2)  # what a redraft does: new references, a body citing them
    Digest.objects.filter(pk=digest.pk).update(body="Also [2].")
    response = save(b, page, admin_form_data, summary="Shipped, the editor says [1].")
    assert response.status_code == 302, response.context and response.context["errors"]
    digest.refresh_from_db()
    assert (digest.summary, digest.body) == ("Shipped, the editor says [1].", "Also [2].")
    assert sorted(digest.digest_references.values_list("number", flat=True)) == [1, 2]


def test_a_citation_number_taken_by_a_redraft_meanwhile_is_refused_not_a_500(digest, ada, admin_form_data):
    from tests.blog.test_byline_admin import with_added_rows

    b = signed_in(ada)
    page = b.get(change_url(digest))
    DigestReferenceFactory(digest=digest, number=2)
    data = admin_form_data(page)
    data = with_added_rows(page, {k: v for k, v in data.items() if not k.startswith("digest_references-1-")}
                           | {"digest_references-TOTAL_FORMS": "1"},
                           "digest_references", {"reference": ReferenceFactory().pk, "number": 2})
    response = b.post(change_url(digest), data)
    assert response.status_code == 200 and "[2]" in response.content.decode()
    assert DigestReference.objects.filter(digest=digest).count() == 2


def test_action_item_and_faq_rows_merge_field_by_field(digest, ada, publisher, admin_form_data):
    b = signed_in(publisher)
    page = b.get(change_url(digest))
    ActionItem.objects.filter(digest=digest).update(text="Upgrade now")
    FAQEntry.objects.filter(digest=digest).update(answer="Because [1].")
    response = save(b, page, admin_form_data, **{"action_items-0-priority": ActionItem.Priority.IMMEDIATE,
                                                  "faq_entries-0-question": "Why, really?"})
    assert response.status_code == 302, response.context and response.context["errors"]
    item, entry = ActionItem.objects.get(digest=digest), FAQEntry.objects.get(digest=digest)
    assert (item.text, item.priority) == ("Upgrade now", ActionItem.Priority.IMMEDIATE)
    assert (entry.question, entry.answer) == ("Why, really?", "Because [1].")


def test_a_faq_answer_changed_on_both_sides_is_a_conflict(digest, ada, publisher, admin_form_data):
    b = signed_in(publisher)
    page = b.get(change_url(digest))
    FAQEntry.objects.filter(digest=digest).update(answer="Theirs.")
    response = save(b, page, admin_form_data, **{"faq_entries-0-answer": "Mine."})
    assert response.status_code == 200
    assert FAQEntry.objects.get(digest=digest).answer == "Theirs."
    html = response.content.decode()
    assert f'name="{RESOLVE}faq_entries-0-answer"' in html and "Theirs." in html and "Mine." in html


def test_an_api_write_between_open_and_save_is_merged_or_refused(post, ada, admin_form_data, client):
    token = ApiToken.issue(ada, "desk", ["write:content"])[1]
    b = signed_in(ada)
    page, page2 = b.get(change_url(post)), b.get(change_url(post))
    payload = {"title": "API title", "slug": post.slug, "body": post.body, "excerpt": post.excerpt,
               "authors": [{"slug": a.slug} for a in post.ordered_authors()]}
    answer = client.put(f"/api/v1/posts/{post.slug}", payload, content_type="application/json",
                        HTTP_AUTHORIZATION=f"Bearer {token}")
    assert answer.status_code == 200, answer.content
    assert save(b, page, admin_form_data, body="Admin body").status_code == 302
    assert Post.objects.filter(pk=post.pk, title="API title", body="Admin body").exists()
    refused = save(b, page2, admin_form_data, title="Admin title")
    assert refused.status_code == 200 and Post.objects.get(pk=post.pk).title == "API title"
    assert any("Ada Lovelace" in str(m) for m in refused.context["messages"])


def test_authors_merge_and_conflict(publisher, admin_form_data):
    author = AuthorFactory(name="Carol", bio="Old bio")
    b = signed_in(publisher)
    page, page2 = b.get(change_url(author)), b.get(change_url(author))
    Author.objects.filter(pk=author.pk).update(name="Carol Danvers")
    assert save(b, page, admin_form_data, bio="New bio").status_code == 302
    assert Author.objects.filter(pk=author.pk, name="Carol Danvers", bio="New bio").exists()
    assert save(b, page2, admin_form_data, name="Carol D.").status_code == 200
    assert Author.objects.get(pk=author.pk).name == "Carol Danvers"


def test_topics_keep_repositories_added_meanwhile(publisher, admin_form_data):
    topic = TopicFactory(name="Compilers", description="Old")
    RepositoryFactory(topic=topic, full_name="a/one")
    b = signed_in(publisher)
    page = b.get(change_url(topic))
    RepositoryFactory(topic=topic, full_name="b/two")
    Topic.objects.filter(pk=topic.pk).update(name="Compilers and linkers")
    assert save(b, page, admin_form_data, description="New").status_code == 302
    assert Topic.objects.filter(pk=topic.pk, name="Compilers and linkers", description="New").exists()
    assert sorted(topic.repositories.values_list("full_name", flat=True)) == ["a/one", "b/two"]


def test_repositories_merge_and_conflict(publisher, admin_form_data):
    repository = RepositoryFactory(full_name="a/one", description="Old")
    b = signed_in(publisher)
    page, page2 = b.get(change_url(repository)), b.get(change_url(repository))
    Repository.objects.filter(pk=repository.pk).update(description="Theirs")
    assert save(b, page, admin_form_data, url="https://example.com/one").status_code == 302
    assert Repository.objects.filter(pk=repository.pk, description="Theirs", url="https://example.com/one").exists()
    assert save(b, page2, admin_form_data, description="Mine").status_code == 200
    assert Repository.objects.get(pk=repository.pk).description == "Theirs"


def test_images_merge_and_conflict(publisher, admin_form_data):
    image = Image.objects.create(original="originals/x.png", alt="A cat", width=10, height=10, format="PNG",
                                 fallback="png", content_hash="0" * 64)
    b = signed_in(publisher)
    page, page2 = b.get(change_url(image)), b.get(change_url(image))
    assert page.status_code == 200
    Image.objects.filter(pk=image.pk).update(alt="A black cat")
    assert save(b, page, admin_form_data, caption="On a mat").status_code == 302
    assert Image.objects.filter(pk=image.pk, alt="A black cat", caption="On a mat").exists()
    assert save(b, page2, admin_form_data, alt="A dog").status_code == 200
    assert Image.objects.get(pk=image.pk).alt == "A black cat"
