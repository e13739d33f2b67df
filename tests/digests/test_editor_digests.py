"""What editors need on digests (issue 19): the Digest drafts list, a reference picker that tells
look-alike references apart, and FAQ answers whose citations are checked and linked like the body's."""
import datetime

import pytest
from django.contrib.admin.helpers import ACTION_CHECKBOX_NAME
from django.urls import reverse
from django.utils import timezone

from digests.factories import DigestFactory, DigestReferenceFactory, ReferenceFactory, RepositoryFactory
from digests.models import Digest, FAQEntry, Reference
from ingestion.models import DigestDraft
from publishing.workflow import Status

from .test_citations import change_url, reference_errors

pytestmark = pytest.mark.django_db


# --- Digest drafts ------------------------------------------------------------------------------


def test_editors_see_the_digest_drafts_list_and_may_regenerate(client, editor):
    digest = DigestFactory(status=Status.DRAFT, published_at=None)
    DigestDraft.objects.create(digest=digest, report="Drafted 2 references.")
    client.force_login(editor)
    listing = client.get(reverse("admin:ingestion_digestdraft_changelist"))
    assert listing.status_code == 200
    assert "Drafted 2 references." in listing.content.decode()
    actions = {name for name, _ in listing.context["action_form"].fields["action"].choices}
    assert "regenerate" in actions
    assert client.get(reverse("admin:ingestion_digestdraft_add")).status_code == 200  # "Draft a digest"
    index = client.get(reverse("admin:index")).content.decode()
    assert reverse("admin:ingestion_digestdraft_changelist") in index
    response = client.post(reverse("admin:ingestion_digestdraft_changelist"),
                           {"action": "regenerate", ACTION_CHECKBOX_NAME: [str(digest.draft_record.pk)]}, follow=True)
    assert response.status_code == 200


def test_editors_still_cannot_touch_other_ingestion_records(client, editor):
    client.force_login(editor)
    assert client.get(reverse("admin:ingestion_webhookdelivery_changelist")).status_code == 403
    assert client.get(reverse("admin:ingestion_trackedrepository_changelist")).status_code == 403


# --- the reference picker -------------------------------------------------------------------------


def test_look_alike_references_are_told_apart_in_the_picker(client, editor):
    repository = RepositoryFactory(full_name="pytorch/pytorch")
    day = datetime.datetime(2026, 5, 1, 12, tzinfo=datetime.UTC)
    for sha in ("a1b2c3d4e5f60718293a4b5c6d7e8f9012345678", "0fedcba98765432100112233445566778899aabb"):
        ReferenceFactory(repository=repository, kind=Reference.Kind.COMMIT, key=sha, sha=sha, number=None,
                         title="Update README.md", merged_at=day)
    ReferenceFactory(repository=repository, number=186025, title="Update README.md", merged_at=day)
    client.force_login(editor)
    response = client.get(reverse("admin:autocomplete"), {
        "app_label": "digests", "model_name": "digestreference", "field_name": "reference", "term": "README"})
    labels = sorted(result["text"] for result in response.json()["results"])
    assert labels == [
        "pytorch/pytorch #186025 · Update README.md · 2026-05-01",
        "pytorch/pytorch 0fedcba · Update README.md · 2026-05-01",
        "pytorch/pytorch a1b2c3d · Update README.md · 2026-05-01",
    ]


def test_the_picker_on_a_digest_shows_the_same_labels(client, editor):
    digest = DigestFactory(status=Status.DRAFT, published_at=None)
    citation = DigestReferenceFactory(digest=digest, number=1)
    client.force_login(editor)
    page = client.get(change_url(digest)).content.decode()
    assert str(citation.reference) in page and citation.reference.repository.full_name in str(citation.reference)


# --- citations in FAQ answers ------------------------------------------------------------------


@pytest.fixture
def digest_with_faq():
    digest = DigestFactory(status=Status.DRAFT, published_at=None, summary="One [1].", body="Two [2].")
    DigestReferenceFactory(digest=digest, number=1)
    DigestReferenceFactory(digest=digest, number=2)
    FAQEntry.objects.create(digest=digest, position=0, question="What changed?", answer="See [1].")
    return digest


@pytest.mark.parametrize("answer, number", [("Read [7].", 7), ("Read [ref:9] and [1].", 9)])
def test_an_faq_answer_citing_a_missing_reference_is_refused(client, editor, admin_form_data, digest_with_faq,
                                                            answer, number):
    client.force_login(editor)
    data = admin_form_data(client.get(change_url(digest_with_faq)), **{"faq_entries-0-answer": answer})
    response = client.post(change_url(digest_with_faq), data)
    assert response.status_code == 200
    assert reference_errors(response) == [f"Citation [{number}] in the summary, body or FAQ has no matching reference."]
    assert FAQEntry.objects.get(digest=digest_with_faq).answer == "See [1]."


def test_an_faq_citation_counts_as_citing(client, editor, admin_form_data, digest_with_faq):
    client.force_login(editor)
    data = admin_form_data(client.get(change_url(digest_with_faq)), body="No citation here.",
                           **{"faq_entries-0-answer": "Both [1] and [ref:2]."})
    response = client.post(change_url(digest_with_faq), data, follow=True)
    assert response.status_code == 200
    assert not any("never cited" in str(message) for message in response.context["messages"])


def test_publishing_checks_faq_citations(publisher, digest_with_faq):
    FAQEntry.objects.filter(digest=digest_with_faq).update(answer="Gone [5].")
    digest = Digest.objects.get(pk=digest_with_faq.pk)
    with pytest.raises(Exception, match=r"\[5\]"):
        digest.transition(publisher, Status.PUBLISHED)


def test_faq_citations_are_links_like_the_body(client, digest_with_faq):
    digest = Digest.objects.get(pk=digest_with_faq.pk)
    digest.status, digest.published_at = Status.PUBLISHED, timezone.now()
    digest.save()
    page = client.get(digest.get_absolute_url()).content.decode()
    link = '<a class="citation" href="#ref-{}" rel="nofollow noopener noreferrer">[{}]</a>'
    assert link.format(2, 2) in page  # the body's
    assert f"<dd>See {link.format(1, 1)}.</dd>" in page  # the FAQ answer's, the same
