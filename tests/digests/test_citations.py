"""Numbered citations: the scanner, the save-time check in the admin, and the publish check."""
import pytest
from django.contrib.admin.helpers import ACTION_CHECKBOX_NAME
from django.contrib.messages import constants, get_messages
from django.urls import reverse

from digests.citations import check_citations, cited_numbers, strip_citations
from digests.factories import DigestFactory, DigestReferenceFactory, ReferenceFactory
from digests.models import Digest
from publishing.workflow import Status, WorkflowError

# --- the scanner ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("texts", "expected"),
    [
        (["Shipped [1], then [ref:2]."], [1, 2]),
        (["[ref:3] first", "then [1][2] and [3] again"], [3, 1, 2]),
        (["no citations at all"], []),
        (["A [link](https://example.com) and [1](https://x.test) are links, not citations."], []),
        (["[12] and [ref:105]"], [12, 105]),
        (["[ref:] [ref:x] [a] [ 1 ] [-1]"], []),
        (["", None], []),
    ],
)
def test_cited_numbers(texts, expected):
    assert cited_numbers(*texts) == expected


@pytest.mark.parametrize(
    "text",
    [
        "Index with `tensor[0]` in code.",
        "```python\nx = values[2]\n```\n",
        "    indented = code[3]\n",
        r"An escaped \[4] bracket.",
    ],
)
def test_code_and_escaped_brackets_are_not_citations(text):
    """What readers see as a citation link is what the check counts: code is not a citation."""
    assert cited_numbers(text) == []


def test_strip_citations_matches_the_seed_faq_style():
    summary = (
        "ExecuTorch shipped FlashDecoding by default for WebGPU decode operations [ref:1], while "
        "PyTorch's Inductor fixed a critical backward failure in multi-frame training pipelines [ref:3]."
    )
    assert " ".join(strip_citations(summary).split()) == (
        "ExecuTorch shipped FlashDecoding by default for WebGPU decode operations , while "
        "PyTorch's Inductor fixed a critical backward failure in multi-frame training pipelines ."
    )
    assert strip_citations("See [docs](https://d.test) [2]") == "See [docs](https://d.test) "


def test_check_citations_reports_missing_and_uncited():
    report = check_citations(["[1] and [ref:4]", "[2][4]"], [1, 2, 3, 5])
    assert report.missing == [4]
    assert report.uncited == [3, 5]
    assert not report.ok
    assert "[4]" in report.error_message()
    assert report.warning_message() == "References [3], [5] are never cited in the summary, body or FAQ."


def test_messages_for_one_and_many():
    one = check_citations(["[7]"], [2])
    assert one.error_message() == "Citation [7] in the summary, body or FAQ has no matching reference."
    assert one.warning_message() == "Reference [2] is never cited in the summary, body or FAQ."
    many = check_citations(["[7] [9]"], [])
    assert many.error_message() == "Citations [7], [9] in the summary, body or FAQ have no matching reference."
    assert check_citations(["[1]"], [1]).ok


# --- the admin change form --------------------------------------------------------------------


def change_url(digest) -> str:
    return reverse("admin:digests_digest_change", args=[digest.pk])


def messages_of(response) -> list[tuple[int, str]]:
    return [(message.level, str(message)) for message in get_messages(response.wsgi_request)]


def reference_errors(response) -> list[str]:
    """The errors shown above the cited-references inline."""
    formset = next(f.formset for f in response.context["inline_admin_formsets"] if f.formset.prefix == "digest_references")
    return list(formset.non_form_errors())


@pytest.fixture
def digest_with_two_references():
    digest = DigestFactory(status=Status.DRAFT, published_at=None, summary="One [1].", body="Two [ref:2].")
    DigestReferenceFactory(digest=digest, number=1)
    DigestReferenceFactory(digest=digest, number=2)
    return digest


@pytest.fixture(params=["editor", "publisher"])
def staff(request):
    return request.getfixturevalue(request.param)


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("field", "text", "number"),
    [
        ("summary", "Shipped [3].", 3),
        ("summary", "Shipped [ref:3].", 3),
        ("body", "Details [1][2] and [ref:9].", 9),
        ("body", "Details [40].", 40),
    ],
)
def test_save_citing_a_missing_number_is_refused(
    client, staff, admin_form_data, digest_with_two_references, field, text, number
):
    digest = digest_with_two_references
    client.force_login(staff)
    data = admin_form_data(client.get(change_url(digest)), **{field: text, "headline": "Changed"})
    response = client.post(change_url(digest), data)
    assert response.status_code == 200
    assert reference_errors(response) == [f"Citation [{number}] in the summary, body or FAQ has no matching reference."]
    assert f"[{number}]" in response.content.decode()
    assert Digest.objects.get(pk=digest.pk).headline == digest.headline


@pytest.mark.django_db
def test_both_citation_forms_count(client, staff, admin_form_data, digest_with_two_references):
    digest = digest_with_two_references
    client.force_login(staff)
    data = admin_form_data(client.get(change_url(digest)), summary="A [ref:1].", body="B [2].", headline="Saved")
    response = client.post(change_url(digest), data)
    assert response.status_code == 302
    assert Digest.objects.get(pk=digest.pk).headline == "Saved"
    assert not [text for level, text in messages_of(response) if level == constants.WARNING]


@pytest.mark.django_db
def test_uncited_references_save_with_a_warning(client, staff, admin_form_data, digest_with_two_references):
    digest = digest_with_two_references
    client.force_login(staff)
    data = admin_form_data(client.get(change_url(digest)), summary="Only one [1].", body="")
    response = client.post(change_url(digest), data)
    assert response.status_code == 302
    assert Digest.objects.get(pk=digest.pk).body == ""
    assert (constants.WARNING, "Reference [2] is never cited in the summary, body or FAQ.") in messages_of(response)


@pytest.mark.django_db
def test_adding_a_reference_in_the_same_save_resolves_a_citation(client, staff, admin_form_data, digest_with_two_references):
    digest = digest_with_two_references
    new_reference = ReferenceFactory()
    client.force_login(staff)
    data = admin_form_data(
        client.get(change_url(digest)),
        body="Two [ref:2] and three [3].",
        **{"digest_references-2-number": "3", "digest_references-2-reference": str(new_reference.pk)},
    )
    response = client.post(change_url(digest), data)
    assert response.status_code == 302
    assert list(digest.digest_references.values_list("number", flat=True)) == [1, 2, 3]


@pytest.mark.django_db
def test_deleting_a_cited_reference_is_refused(client, staff, admin_form_data, digest_with_two_references):
    digest = digest_with_two_references
    client.force_login(staff)
    data = admin_form_data(client.get(change_url(digest)), **{"digest_references-1-DELETE": "on"})
    response = client.post(change_url(digest), data)
    assert response.status_code == 200
    assert reference_errors(response) == ["Citation [2] in the summary, body or FAQ has no matching reference."]
    assert digest.digest_references.count() == 2


@pytest.mark.django_db
def test_duplicate_citation_numbers_are_refused(client, staff, admin_form_data, digest_with_two_references):
    digest = digest_with_two_references
    client.force_login(staff)
    data = admin_form_data(
        client.get(change_url(digest)),
        **{"digest_references-1-number": "1", "body": "Two [ref:1]."},
    )
    response = client.post(change_url(digest), data)
    assert response.status_code == 200
    assert reference_errors(response) == ["Citation number [1] is used by more than one reference."]
    assert sorted(digest.digest_references.values_list("number", flat=True)) == [1, 2]


@pytest.mark.django_db
def test_duplicate_numbers_among_new_rows_are_refused(client, staff, admin_form_data):
    digest = DigestFactory(status=Status.DRAFT, published_at=None, summary="A [5].", body="")
    first, second = ReferenceFactory(), ReferenceFactory()
    client.force_login(staff)
    data = admin_form_data(
        client.get(change_url(digest)),
        **{
            "digest_references-TOTAL_FORMS": "2",
            "digest_references-0-number": "5",
            "digest_references-0-reference": str(first.pk),
            "digest_references-1-number": "5",
            "digest_references-1-reference": str(second.pk),
        },
    )
    response = client.post(change_url(digest), data)
    assert response.status_code == 200
    assert reference_errors(response) == ["Citation number [5] is used by more than one reference."]
    assert not digest.digest_references.exists()


@pytest.mark.django_db
def test_new_digest_citing_nothing_it_has_is_refused(client, editor, admin_form_data):
    topic = DigestFactory().topic
    client.force_login(editor)
    url = reverse("admin:digests_digest_add")
    data = admin_form_data(
        client.get(url), topic=topic.pk, date="2030-01-01", headline="New", slug="new",
        summary="Claims [1].", status=Status.DRAFT,
    )
    response = client.post(url, data)
    assert response.status_code == 200
    assert "Citation [1] in the summary, body or FAQ has no matching reference." in response.content.decode()
    assert not Digest.objects.filter(slug="new").exists()


@pytest.mark.django_db
def test_code_in_the_body_does_not_block_saving(client, editor, admin_form_data, digest_with_two_references):
    digest = digest_with_two_references
    client.force_login(editor)
    data = admin_form_data(client.get(change_url(digest)), body="Use `weights[7]` after [ref:2].")
    assert client.post(change_url(digest), data).status_code == 302
    assert Digest.objects.get(pk=digest.pk).body == "Use `weights[7]` after [ref:2]."


# --- publishing -------------------------------------------------------------------------------


@pytest.mark.django_db
def test_transition_refuses_to_publish_unresolved_citations(publisher):
    digest = DigestFactory(status=Status.IN_REVIEW, published_at=None, summary="[1] and [2]", body="")
    DigestReferenceFactory(digest=digest, number=1)
    with pytest.raises(WorkflowError, match=r"\[2\]"):
        digest.transition(publisher, Status.PUBLISHED)
    assert Digest.objects.get(pk=digest.pk).status == Status.IN_REVIEW


@pytest.mark.django_db
def test_bulk_publish_refuses_digests_with_unresolved_citations(client, publisher):
    broken = DigestFactory(status=Status.IN_REVIEW, published_at=None, headline="Broken", summary="Cites [4].")
    sound = DigestFactory(status=Status.IN_REVIEW, published_at=None, summary="Cites [1].")
    DigestReferenceFactory(digest=sound, number=1)
    client.force_login(publisher)
    response = client.post(
        reverse("admin:digests_digest_changelist"),
        {"action": "publish", ACTION_CHECKBOX_NAME: [str(broken.pk), str(sound.pk)]},
        follow=True,
    )
    assert Digest.objects.get(pk=broken.pk).status == Status.IN_REVIEW
    assert Digest.objects.get(pk=sound.pk).status == Status.PUBLISHED
    texts = [text for _, text in messages_of(response)]
    assert "Published: 1 item." in texts
    assert any("Broken" in text and "[4]" in text for text in texts)


@pytest.mark.django_db
def test_publishing_through_change_form_rechecks_citations(client, publisher, admin_form_data, digest_with_two_references):
    digest = digest_with_two_references
    client.force_login(publisher)
    data = admin_form_data(client.get(change_url(digest)), status=Status.PUBLISHED, summary="[8]")
    assert client.post(change_url(digest), data).status_code == 200
    assert Digest.objects.get(pk=digest.pk).status == Status.DRAFT


@pytest.mark.django_db
def test_all_duplicate_numbers_are_named(client, publisher, admin_form_data):
    digest = DigestFactory(status=Status.DRAFT, published_at=None, summary="[2] [3]", body="")
    references = ReferenceFactory.create_batch(4)
    client.force_login(publisher)
    rows = {}
    for index, (number, reference) in enumerate(zip([3, 2, 3, 2], references)):
        rows[f"digest_references-{index}-number"] = str(number)
        rows[f"digest_references-{index}-reference"] = str(reference.pk)
    data = admin_form_data(client.get(change_url(digest)), **{"digest_references-TOTAL_FORMS": "4"}, **rows)
    response = client.post(change_url(digest), data)
    assert reference_errors(response) == ["Citation numbers [2], [3] are used by more than one reference."]


@pytest.mark.django_db
def test_citation_number_zero_is_a_real_number(client, publisher, admin_form_data):
    digest = DigestFactory(status=Status.DRAFT, published_at=None, summary="Zero [0].", body="")
    client.force_login(publisher)
    data = admin_form_data(
        client.get(change_url(digest)),
        **{"digest_references-0-number": "0", "digest_references-0-reference": str(ReferenceFactory().pk)},
    )
    assert client.post(change_url(digest), data).status_code == 302
    assert list(digest.digest_references.values_list("number", flat=True)) == [0]
