"""The parts of drafting that judge changes: titles for prose, significance, folding PRs and commits."""
import datetime

import pytest

from digests.factories import ReferenceFactory, RepositoryFactory, TopicFactory
from digests.models import Reference
from ingestion import drafting_text
from ingestion.drafting import draft_digest
from ingestion.drafting_changes import clean_title, significance, theme
from ingestion.drafting_words import third_person
from ingestion.importers import pull_request_fields, pull_request_stats, upsert_pull_request, upsert_pull_requests

from .conftest import fixture_payload

DAY = datetime.date(2026, 6, 29)
NOON = datetime.datetime(2026, 6, 29, 12, tzinfo=datetime.UTC)


@pytest.mark.parametrize("title, clean", [
    ("[ExecuTorch][WebGPU] Enable FlashDecoding by default (#20586)", "Enable FlashDecoding by default"),
    ("feat: Add CharacterErrorRate (CER) metric", "Add CharacterErrorRate (CER) metric"),
    ("fix(inductor)!: Restore the registry.", "Restore the registry"),
    ("Remove () leftovers [] here", "Remove leftovers here"),
    ("[Test] Refactor test_nn.py [1/N] (#186200)", "Refactor test_nn.py [1/N]"),
    ("[WIP]", "[WIP]"),  # nothing left: the title as given rather than nothing
])
def test_clean_title(title, clean):
    assert clean_title(title) == clean


@pytest.mark.parametrize("title, clause", [
    ("Fix the registry", "fixes the registry"), ("apply patch 1", "applies patch 1"),
    ("Add a router", "adds a router"), ("Faster Cholesky", "ships faster Cholesky"),
    ("MPS gets faster", "ships MPS gets faster"), ("Qwen3 lands", "ships Qwen3 lands"),
])
def test_third_person(title, clause):
    assert third_person(title) == clause


@pytest.mark.django_db
def test_significance_weighs_labels_size_reactions_and_reviewers():
    repository = RepositoryFactory(full_name="pytorch/pytorch")

    def score(**fields):
        fields.setdefault("labels", [])
        return significance(ReferenceFactory.build(repository=repository, **fields))

    small = score(stats={"additions": 1, "deletions": 1, "changed_files": 1})
    big = score(stats={"additions": 2000, "deletions": 400, "changed_files": 30})
    assert small < big < score(labels=["security"], stats={"additions": 1, "deletions": 1, "changed_files": 1})
    assert score(labels=["bc-breaking"]) == score(labels=["topic: bc breaking"]) > score(labels=["deprecation"])
    assert score(labels=["module: deprecation"]) > score(labels=["release notes: nn"]) > score(labels=["bug"])
    assert score(stats={"reactions": 3}) > score() and score(stats={"reviewers": 2}) > score()
    capped = score() + 60  # labels together count at most 60 points
    assert score(labels=["security", "bc-breaking", "deprecated"]) == score(labels=["security", "breaking"]) == capped
    commit = significance(ReferenceFactory.build(repository=repository, kind=Reference.Kind.COMMIT, labels=[]))
    assert score() > commit  # a reviewed pull request outranks a bare commit of the same size


@pytest.mark.django_db
def test_theme_from_title_tag_then_label_then_commit_type():
    repository = RepositoryFactory(full_name="pytorch/executorch")
    assert theme(ReferenceFactory.build(repository=repository, title="[ExecuTorch][WebGPU] x", labels=[])) == "WebGPU"
    assert theme(ReferenceFactory.build(repository=repository, title="[rl] x", labels=[])) == "RL"
    assert theme(ReferenceFactory.build(repository=repository, title="x", labels=["module: inductor"])) == "Inductor"
    assert theme(ReferenceFactory.build(repository=repository, title="fix: x", labels=[])) == "Fixes"
    assert theme(ReferenceFactory.build(repository=repository, title="x", labels=["bug"])) == "Other changes"


def test_pull_request_stats_from_a_recorded_payload():
    pull = fixture_payload("pull_request.closed")["pull_request"]
    assert pull_request_stats(pull) == {"additions": 1, "deletions": 1, "changed_files": 1, "review_comments": 1,
                                        "comments": 0, "reviewers": 1}
    listed = {name: value for name, value in pull.items() if name not in ("additions", "deletions", "changed_files",
                                                                         "comments", "review_comments")}
    assert pull_request_stats(listed) is None and "stats" not in pull_request_fields(listed)


@pytest.mark.django_db
def test_a_listed_pull_request_keeps_the_sizes_a_webhook_stored():
    repository = RepositoryFactory(full_name="Codertocat/Hello-World")
    pull = fixture_payload("pull_request.closed")["pull_request"]
    upsert_pull_request(repository, pull)
    listed = {name: value for name, value in pull.items() if name not in ("additions", "deletions", "changed_files",
                                                                         "comments", "review_comments")}
    upsert_pull_requests(repository, [{**listed, "title": "Renamed", "updated_at": "2019-05-16T00:00:00Z"}])
    reference = Reference.objects.get()
    assert reference.title == "Renamed" and reference.stats["additions"] == 1


@pytest.mark.django_db
def test_a_commit_without_sha_author_or_pr_prints_no_empty_code_or_brackets():
    topic = TopicFactory(name="PyTorch", slug="pytorch")
    repository = RepositoryFactory(full_name="pytorch/pytorch", topic=topic)
    ReferenceFactory(repository=repository, kind=Reference.Kind.COMMIT, key="seed:patch-1", sha="", number=None,
                     state="merged", author_login="", title="apply patch 1.", labels=[], merged_at=NOON)
    digest = draft_digest(topic, DAY).digest
    for text in (digest.headline, digest.summary, digest.body, *digest.faq_entries.values_list("answer", flat=True)):
        assert "``" not in text and "()" not in text and " ." not in text
    assert "- Apply patch 1 [1]" in digest.body
    assert digest.summary == "pytorch/pytorch applies patch 1 [1]."
    assert drafting_text.md_unescape(drafting_text.md_escape("a_b [1]")) == "a_b [1]"
