"""A digest's stored card and page parts stay true: every write of something they show re-renders them.

See digests/cards.py. Each test changes one thing the way the admin, the API or an
importer would (a save or a delete, never the stored fields) and reads the page.
"""
import io

import pytest
from django.core.management import call_command
from django.test import Client

from digests import cards
from digests.factories import (
    ActionItemFactory, DigestFactory, DigestReferenceFactory, FAQEntryFactory, ReferenceFactory, RepositoryFactory,
    TopicFactory,
)
from digests.models import ActionItem, Digest, DigestReference, FAQEntry, Reference
from tests.rerenders import run_rerenders

from .helpers import json_ld, visible_text


def page(digest) -> str:
    return Client().get(digest.get_absolute_url()).content.decode()


def wire() -> str:
    return visible_text(Client().get("/wire/").content.decode())


@pytest.fixture
def digest(db):
    topic = TopicFactory(name="Compilers", slug="compilers")
    repository = RepositoryFactory(full_name="llvm/llvm-project", topic=topic)
    digest = DigestFactory(topic=topic, headline="Carded digest", summary="The linker got faster [1].")
    DigestReferenceFactory(digest=digest, number=1,
                           reference=ReferenceFactory(repository=repository, title="Speed up the linker"))
    ActionItemFactory(digest=digest, repository=repository, text="Upgrade the toolchain", position=1)
    return digest


@pytest.mark.django_db
def test_a_new_digest_shows_its_card_references_action_items_and_faq(digest):
    assert "By RepoJournal · Filed" in wire() and "The linker got faster [1]." in wire()
    text = visible_text(page(digest))
    assert "Speed up the linker" in text and "Upgrade the toolchain" in text and "llvm/llvm-project" in text
    assert "What changed in Compilers on" in text  # the generated FAQ while editors wrote none


@pytest.mark.django_db
def test_editing_the_digest_re_renders_card_description_and_json_ld(digest):
    digest.headline, digest.summary = "Renamed digest", "Rewritten & shorter summary [1]."
    digest.save()
    assert "Renamed digest" in wire() and "Rewritten & shorter summary [1]." in wire()
    html = page(digest)
    assert '<meta name="description" content="Rewritten &amp; shorter summary.">' in html  # no citation marks
    article = next(block for block in json_ld(html) if block["@type"] == "NewsArticle")
    assert article["headline"] == "Renamed digest" and article["description"] == "Rewritten & shorter summary [1]."


@pytest.mark.django_db
def test_editing_a_cited_reference_re_renders_the_digest_page(digest):
    reference = Reference.objects.get(title="Speed up the linker")
    reference.title, reference.url = "Speed up the linker a lot", "https://example.org/pull/9"
    reference.save()
    html = page(digest)
    assert "Speed up the linker a lot" in visible_text(html) and 'href="https://example.org/pull/9"' in html
    article = next(block for block in json_ld(html) if block["@type"] == "NewsArticle")
    assert article["citation"][0]["name"] == "Speed up the linker a lot"


@pytest.mark.django_db
def test_renaming_the_topic_re_renders_cards_and_pages(digest):
    topic = digest.topic
    topic.name, topic.slug = "Toolchains", "toolchains"
    topic.save()
    run_rerenders()  # the worker's part of the rename
    assert "About Toolchains" in wire() and "Compilers" not in wire()
    assert 'href="/topics/toolchains/"' in page(digest)
    assert "What changed in Toolchains on" in visible_text(page(digest))


@pytest.mark.django_db
def test_renaming_a_repository_re_renders_the_pages_citing_or_naming_it(digest):
    repository = digest.action_items.get().repository
    repository.full_name = "llvm/llvm"
    repository.save()
    run_rerenders()
    html = page(digest)  # the reference's own GitHub URL is its data, not the repository's name
    assert "llvm/llvm-project" not in visible_text(html) and "/repos/llvm/llvm-project/" not in html
    assert html.count('href="/repos/llvm/llvm/"') == 3  # its citation, its action item, "which shipped"


@pytest.mark.django_db
def test_editing_a_repository_description_does_not_re_render_its_digests(digest, django_assert_max_num_queries):
    repository = digest.action_items.get().repository
    repository.description = "Not shown on digest pages."
    with django_assert_max_num_queries(3):  # read the shown values, write; no digest rendered
        repository.save()


@pytest.mark.django_db
def test_citations_action_items_and_faq_entries_re_render_when_added_changed_or_deleted(digest):
    repository = RepositoryFactory(full_name="rust-lang/rust", topic=digest.topic)
    citation = DigestReferenceFactory(digest=digest, number=2,
                                      reference=ReferenceFactory(repository=repository, title="Faster borrowck"))
    assert "Faster borrowck" in visible_text(page(digest)) and "rust-lang/rust" in visible_text(page(digest))
    citation.delete()
    assert "Faster borrowck" not in page(digest)

    item = ActionItem.objects.get(digest=digest)
    item.text, item.priority = "Pin the toolchain", ActionItem.Priority.IMMEDIATE
    item.save()
    assert "Pin the toolchain" in visible_text(page(digest)) and "priority-immediate" in page(digest)
    ActionItem.objects.filter(digest=digest).delete()
    assert "Pin the toolchain" not in page(digest) and "Action items" not in page(digest)

    entry = FAQEntryFactory(digest=digest, question="Is it faster?", answer="Yes, twice.")
    assert "Is it faster?" in page(digest) and "What changed in Compilers" not in page(digest)
    entry.answer = "Yes, three times."
    entry.save()
    assert "Yes, three times." in page(digest)
    FAQEntry.objects.filter(digest=digest).delete()
    assert "Is it faster?" not in page(digest) and "What changed in Compilers" in visible_text(page(digest))


@pytest.mark.django_db
def test_refresh_rendered_repairs_bulk_writes_and_matches_the_signals(digest):
    rendered = Digest.objects.values(*cards.FIELDS).get(pk=digest.pk)
    DigestReference.objects.filter(digest=digest).update(number=7)  # update() sends no signals
    assert Digest.objects.filter(pk=digest.pk).refresh_rendered() == 1
    assert 'id="ref-7"' in page(digest)
    DigestReference.objects.filter(digest=digest).update(number=1)
    Digest.objects.update(card_html="", page_html="")
    call_command("refresh_digests", "--missing", stdout=io.StringIO())
    assert Digest.objects.values(*cards.FIELDS).get(pk=digest.pk) == rendered


@pytest.mark.django_db
def test_listings_load_only_the_card_columns(digest):
    """A listing row must not carry the page parts or the Markdown sources (tens of kB per digest)."""
    deferred = Digest.objects.published().for_cards().get().get_deferred_fields()
    assert {"page_html", "head_html", "summary", "body", "summary_html", "body_html"} <= deferred


@pytest.mark.django_db
def test_the_repository_filter_follows_citations_action_items_and_moved_references(digest):
    llvm = digest.action_items.get().repository
    rust = RepositoryFactory(full_name="rust-lang/rust", topic=digest.topic)
    filtered = lambda name: Client().get(f"/wire/?repository={name}")  # noqa: E731
    assert "Carded digest" in filtered("llvm/llvm-project").content.decode()
    assert filtered("rust-lang/rust").status_code == 404  # nothing published names it yet
    reference = Reference.objects.get(title="Speed up the linker")
    reference.repository = rust
    reference.save()
    assert "Carded digest" in filtered("rust-lang/rust").content.decode()
    assert "Carded digest" in filtered("llvm/llvm-project").content.decode()  # still its action item's
    ActionItem.objects.filter(digest=digest).delete()
    assert filtered("llvm/llvm-project").status_code == 404
    assert list(Digest.objects.citing(llvm)) == [] and list(Digest.objects.citing(rust)) == [digest]


@pytest.mark.django_db
def test_deleting_a_digest_deletes_its_children_and_links_without_re_rendering_it(
    digest, django_assert_max_num_queries
):
    FAQEntryFactory(digest=digest)
    # collect and delete (its og:image card and image uses too), unlink its newsletter message (kept: what was
    # mailed), ask whether a webhook endpoint listens; no render
    with django_assert_max_num_queries(16):
        digest.delete()
    assert not Digest.objects.exists() and not DigestReference.objects.exists()
    assert not digest.topic.repositories.get().digest_links.exists()
    DigestFactory(topic=digest.topic, slug="another").delete()  # a queryset delete too
    Digest.objects.all().delete()


@pytest.mark.django_db
def test_a_bulk_re_import_of_a_cited_reference_re_renders_its_digest(digest):
    from ingestion.importers import upsert_page

    reference = Reference.objects.get(title="Speed up the linker")
    item = (reference.key, {"title": "Speed up the linker (re-imported)"}, None)
    assert upsert_page(reference.repository, reference.kind, [item]).updated == 1
    assert "Speed up the linker (re-imported)" in visible_text(page(digest))
