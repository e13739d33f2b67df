"""The seed days, delivered as GitHub would, drafted: the draft reads like the published seed digests.

The first seed day's draft is also the example in docs/operations.md ("A drafted
digest"); ``test_the_documented_example_is_what_drafting_produces`` keeps the two
equal. To refresh the doc after changing drafting, run this file with
``WRITE_DOC_EXAMPLE=1``.
"""
import os
import re
from pathlib import Path

import pytest

from digests.models import Digest, Reference
from ingestion.drafting import draft_digest
from ingestion.drafting_changes import clean_title, is_merge_commit_of

from .seed_days import SEEDS, deliver_seed_day, seed_changes, seed_digest
from .test_drafting_admin import save_unchanged

pytestmark = pytest.mark.django_db

OPERATIONS = Path(__file__).resolve().parents[2] / "docs" / "operations.md"
EXAMPLE = re.compile(r"(<!-- drafted-example:start -->\n)(.*?)(<!-- drafted-example:end -->)", re.DOTALL)
ORPHANED = re.compile(r"\s[.,;:!?](\s|$)")
CITATION = re.compile(r"\[\d+\]")


@pytest.fixture(params=SEEDS)
def drafted(request, post_webhook):
    seed = seed_digest(request.param)
    topic = deliver_seed_day(post_webhook, seed)
    result = draft_digest(topic, seed.date)
    return seed, Digest.objects.get(pk=result.digest.pk)


def test_headline_names_the_most_significant_changes_in_plain_words(drafted):
    seed, digest = drafted
    clauses = re.split(r"; | and ", digest.headline)
    assert 2 <= len(clauses) <= 3 and len(digest.headline) <= 300
    assert not re.search(r"\[|\(#\d+\)|\(\s*\)|``", digest.headline)  # no [Tag], (#123), empty brackets
    top = {"000_8ef3954005822ae7.txt": "Pytorch restores external object registry before backward",  # "security"
           "001_54368d6fe217c462.txt": "Pytorch fixes build_with_debinfo.py broken by CONFIGURE_DEPENDS globbing"}
    assert digest.headline.startswith(top[next(name for name in SEEDS if seed_digest(name).date == seed.date)])


def test_one_cited_summary_sentence_per_repository(drafted):
    seed, digest = drafted
    repositories = list(dict.fromkeys(change["repository"] for change in seed_changes(seed)))
    starts = "|".join(re.escape(name) for name in repositories)
    sentences = re.split(rf"\. (?=(?:{starts}) )", digest.summary.removesuffix("."))
    assert len(sentences) == len(repositories)
    assert sorted(sentence.split(" ", 1)[0] for sentence in sentences) == sorted(repositories)
    assert all(CITATION.search(sentence) for sentence in sentences)
    assert not re.search(r"\\\[[^\]]*\\\]\s*[A-Z]|\(#\d+\)", digest.summary)  # no "[Tag] Title", no "(#123)"


def test_each_change_is_cited_once_and_every_reference_is_cited(drafted):
    seed, digest = drafted
    cited = [c.reference for c in digest.digest_references.select_related("reference__repository")]
    assert len(cited) == len(seed_changes(seed))  # a PR and the commit that merged it count once
    assert all(reference.kind == Reference.Kind.PULL_REQUEST for reference in cited)  # cited by the PR
    landed = Reference.objects.filter(kind=Reference.Kind.COMMIT, merged_at__date=seed.date)
    assert landed.exists() and all(any(is_merge_commit_of(commit, pull) for pull in cited) for commit in landed)
    assert digest.citation_report().ok and digest.citation_report().uncited == []
    bullets = [line for line in digest.body.splitlines() if line.startswith("- ")]
    assert len(bullets) == len(cited)
    assert re.search(r"^### pytorch/\w+\n\n#### \w+", digest.body, re.MULTILINE)  # by repository, then theme


def test_no_empty_code_no_orphaned_punctuation_no_empty_answers(drafted):
    _seed, digest = drafted
    answers = [entry.answer for entry in digest.faq_entries.all()]
    for text in [digest.headline, digest.summary, digest.body, *answers]:
        assert "(``)" not in text and "``" not in text and "()" not in text
        assert not ORPHANED.search(text), text
    assert len(answers) == 3 and all(answer.strip() for answer in answers)
    assert digest.action_items.exists() and digest.action_items.first().priority == "immediate"


def test_the_drafts_save_in_the_admin_unedited(drafted, client, editor, admin_form_data):
    _seed, digest = drafted
    client.force_login(editor)
    assert save_unchanged(client, digest, admin_form_data).status_code == 302


def example(digest: Digest) -> str:
    """The draft as the doc shows it: the fields an editor finishes, verbatim."""
    actions = "\n".join(f"- {item.text} ({item.repository.full_name}, {item.priority})"
                        for item in digest.action_items.select_related("repository"))
    faq = "\n".join(f"- {entry.question}\n  {entry.answer}" for entry in digest.faq_entries.all())
    references = "\n".join(f"[{c.number}] {c.reference.display_title}"
                           for c in digest.digest_references.select_related("reference"))
    return (f"```markdown\nHeadline: {digest.headline}\n\nSummary: {digest.summary}\n\n{digest.body}\n\n"
            f"Action items:\n{actions}\n\nFAQ:\n{faq}\n\nReferences (titles as GitHub gives them):\n{references}\n```\n")


def test_the_documented_example_is_what_drafting_produces(post_webhook):
    seed = seed_digest(SEEDS[0])
    digest = draft_digest(deliver_seed_day(post_webhook, seed), seed.date).digest
    text = OPERATIONS.read_text()
    if os.environ.get("WRITE_DOC_EXAMPLE"):
        OPERATIONS.write_text(EXAMPLE.sub(lambda m: m[1] + example(digest) + m[3], text))
        text = OPERATIONS.read_text()
    match = EXAMPLE.search(text)
    assert match, "docs/operations.md lost its drafted-example markers"
    assert match[2] == example(digest), "drafting changed: refresh the doc with WRITE_DOC_EXAMPLE=1"
    assert clean_title("[Inductor] Restore registry (#186025)") == "Restore registry"
