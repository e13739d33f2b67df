"""draft_digest: a day of merged work becomes a draft; regenerating respects the editor's changes."""
import datetime

import pytest
from django.core.management import CommandError, call_command

from digests.factories import DigestFactory, ReferenceFactory, RepositoryFactory, TopicFactory
from digests.models import Digest, Reference
from ingestion.drafting import draft_digest
from ingestion.models import IngestionRun
from publishing.workflow import Status

pytestmark = pytest.mark.django_db

DAY = datetime.date(2026, 6, 29)


def at(hour: int, day: datetime.date = DAY) -> datetime.datetime:
    return datetime.datetime.combine(day, datetime.time(hour), tzinfo=datetime.UTC)


@pytest.fixture
def topic():
    return TopicFactory(name="PyTorch", slug="pytorch")


@pytest.fixture
def activity(topic):
    """Two repositories' merged work on DAY, plus rows that must stay out of the digest."""
    executorch = RepositoryFactory(full_name="pytorch/executorch", topic=topic)
    pytorch = RepositoryFactory(full_name="pytorch/pytorch", topic=topic)
    elsewhere = RepositoryFactory(full_name="other/repo")
    made = {
        "flash": ReferenceFactory(repository=executorch, number=20586, title="[WebGPU] Enable FlashDecoding",
                                  labels=["security"], merged_at=at(9)),
        "flash_commit": ReferenceFactory(repository=executorch, kind=Reference.Kind.COMMIT, key="a" * 40,
                                         sha="a" * 40, number=20586, state="",
                                         title="[WebGPU] Enable FlashDecoding (#20586)", merged_at=at(10)),
        "registry": ReferenceFactory(repository=pytorch, number=186025, title="[Inductor] Restore registry",
                                     labels=["release notes: inductor", "module: inductor"], merged_at=at(8)),
        "lock": ReferenceFactory(repository=pytorch, number=188142, title="Use std::scoped_lock",
                                 merged_at=at(11)),
        "scoped": ReferenceFactory(repository=pytorch, kind=Reference.Kind.COMMIT, key="b" * 40, sha="b" * 40,
                                   number=None, state="", title="Direct commit", merged_at=at(12)),
    }
    ReferenceFactory(repository=pytorch, number=1, author_login="pytorchbot[bot]", merged_at=at(9))
    ReferenceFactory(repository=pytorch, number=2, author_login="Dependabot", merged_at=at(9))
    ReferenceFactory(repository=pytorch, number=3, merged_at=at(23, DAY - datetime.timedelta(days=1)))
    ReferenceFactory(repository=pytorch, number=4, state="open", merged_at=None)
    ReferenceFactory(repository=pytorch, number=5, state="closed", merged_at=None)
    ReferenceFactory(repository=elsewhere, number=6, merged_at=at(9))
    return made


def cited(digest) -> list[tuple[int, str]]:
    return [(c.number, c.reference.title) for c in digest.digest_references.select_related("reference")]


def test_drafts_a_digest_from_the_days_merged_work(topic, activity):
    result = draft_digest(topic, DAY)
    digest = Digest.objects.get()
    assert result.created and digest == result.digest
    assert digest.status == Status.DRAFT
    # grouped by repository (busiest first); a PR and the commit that merged it are one change, cited by the PR
    assert cited(digest) == [
        (1, "[Inductor] Restore registry"), (2, "Use std::scoped_lock"), (3, "Direct commit"),
        (4, "[WebGPU] Enable FlashDecoding"),
    ]
    # the most significant changes (security label first) in plain words, no [Tag] or (#123)
    assert digest.headline == "Executorch enables FlashDecoding; pytorch restores registry and uses std::scoped_lock"
    # one sentence per repository, each change cited
    assert digest.summary == (
        "pytorch/executorch enables FlashDecoding [4]. "
        "pytorch/pytorch restores registry [1], uses std::scoped\\_lock [2] and ships direct commit [3]."
    )
    assert digest.body.startswith("**4 changes in 2 repositories:** pytorch/executorch (1), pytorch/pytorch (3).")
    assert "#### Inductor\n\n- Restore registry (#186025, by @octocat, labelled “release notes: inductor”) [1]" \
        in digest.body
    assert "- Direct commit (`bbbbbbbbbb`, by @octocat) [3]" in digest.body
    assert digest.citation_report().ok and digest.citation_report().uncited == []
    assert sorted((i.priority, i.repository.full_name) for i in digest.action_items.all()) == [
        ("immediate", "pytorch/executorch"), ("plan", "pytorch/pytorch"),
    ]
    assert digest.action_items.first().text == (
        "Check whether “Enable FlashDecoding” affects you before upgrading (labelled “security”)"
    )
    questions = [entry.question for entry in digest.faq_entries.all()]
    assert questions[2] == "Which PyTorch repositories shipped on June 29, 2026?"
    assert digest.faq_entries.all()[2].answer == "pytorch/pytorch, pytorch/executorch"
    assert digest.faq_entries.all()[0].answer == (  # plain text: no escapes, no citations, no " ."
        "pytorch/executorch enables FlashDecoding. pytorch/pytorch restores registry, uses std::scoped_lock and "
        "ships direct commit."
    )
    run = IngestionRun.objects.get(source="draft")
    assert (run.status, run.created) == ("succeeded", 4)


def test_a_commit_cited_before_its_pull_request_arrived_is_the_same_change(topic, activity):
    """The push webhook came first: the commit was cited alone; when its PR arrives they are one line."""
    activity["flash"].merged_at = at(9, DAY + datetime.timedelta(days=1))
    activity["flash"].save()
    draft_digest(topic, DAY)
    activity["flash"].merged_at = at(9)
    activity["flash"].save()
    draft_digest(topic, DAY)
    digest = Digest.objects.get()
    assert [number for number, _title in cited(digest)] == [1, 2, 3, 4, 5]
    assert digest.body.count("Enable FlashDecoding") == 1
    assert "- Enable FlashDecoding (#20586, `aaaaaaaaaa`, by @octocat, labelled “security”) [4][5]" in digest.body
    assert "enables FlashDecoding [4][5]." in digest.summary


def test_titles_cannot_pose_as_citations_or_markup(topic, activity):
    activity["lock"].title = "[9] <script>alert(1)</script> **bold**"
    activity["lock"].save()
    digest = draft_digest(topic, DAY).digest
    assert digest.citation_report().ok  # "[9]" in a title is not a citation
    assert "<script" not in digest.body_html and "<script" not in digest.summary_html


def test_regenerating_unchanged_changes_nothing(topic, activity):
    first = draft_digest(topic, DAY).digest
    again = draft_digest(topic, DAY)
    assert (again.created, again.added, again.refreshed, again.kept) == (False, [], [], [])
    assert Digest.objects.get().headline == first.headline
    assert first.action_items.count() == 2 and first.faq_entries.count() == 3


def test_regenerating_keeps_editor_changes_and_adds_new_references(topic, activity):
    digest = draft_digest(topic, DAY).digest
    digest.headline = "An editor's headline"
    digest.save()
    digest.action_items.filter(priority="plan").delete()
    late = ReferenceFactory(repository=activity["lock"].repository, number=190000, title="Late fix",
                            labels=["bc-breaking"], merged_at=at(23))

    result = draft_digest(topic, DAY)
    digest.refresh_from_db()
    assert [(c.number, c.reference) for c in result.added] == [(5, late)]
    assert cited(digest)[:4] == cited(Digest.objects.get())[:4]  # old numbers untouched
    assert digest.headline == "An editor's headline"
    assert sorted(result.kept) == ["action_items", "headline"]
    # labelled bc-breaking, the late fix now leads its repository's sentence
    assert "pytorch/pytorch ships late fix [5], restores registry [1]" in digest.summary
    assert "- Late fix (#190000, by @octocat, labelled “bc-breaking”) [5]" in digest.body
    assert [i.priority for i in digest.action_items.all()] == ["immediate"]  # the editor's list, kept
    assert "new: [5] Late fix" in result.summary()
    assert "kept editor changes to: headline, action_items" in result.summary()
    assert digest.draft_record.report == result.summary()


def test_a_digest_written_by_hand_keeps_all_its_text(topic, activity):
    DigestFactory(topic=topic, date=DAY, headline="Hand-made", summary="Mine.", status=Status.DRAFT)
    result = draft_digest(topic, DAY)
    digest = Digest.objects.get()
    assert (digest.headline, digest.summary) == ("Hand-made", "Mine.")
    assert len(result.added) == 4 and set(result.kept) == {"headline", "summary", "body", "action_items", "faq"}


def test_published_digests_are_left_alone(topic, activity):
    DigestFactory(topic=topic, date=DAY, headline="Out", status=Status.PUBLISHED)
    result = draft_digest(topic, DAY)
    assert "only drafts are regenerated" in result.skipped
    assert Digest.objects.get().digest_references.count() == 0
    assert IngestionRun.objects.get().status == "ignored"


def test_a_quiet_day_drafts_nothing(topic, activity):
    result = draft_digest(topic, DAY + datetime.timedelta(days=1))
    assert "no digest drafted" in result.skipped
    assert not Digest.objects.exists()


def test_the_draft_can_be_finished_and_published(topic, activity, publisher):
    digest = draft_digest(topic, DAY).digest
    digest.transition(publisher, Status.PUBLISHED)
    assert Digest.objects.published().get() == digest


def test_draft_digest_command(topic, activity, capsys):
    call_command("draft_digest", "pytorch", "2026-06-29")
    assert "Created draft" in capsys.readouterr().out
    call_command("draft_digest", "PyTorch", "2026-06-29")
    assert "Refreshed draft" in capsys.readouterr().out
    assert Digest.objects.count() == 1


@pytest.mark.parametrize("args, message", [(["nope", "2026-06-29"], "No topic"), (["pytorch", "June"], "YYYY-MM-DD")])
def test_draft_digest_command_rejects_bad_input(topic, args, message):
    with pytest.raises(CommandError, match=message):
        call_command("draft_digest", *args)


def test_regenerating_moves_generated_at_so_only_later_references_count_as_new(topic, activity):
    """The newsroom counts references that arrived after the draft's last generation (DigestDraft.generated_at)."""
    first = draft_digest(topic, DAY).digest.draft_record
    type(first).objects.filter(pk=first.pk).update(generated_at=at(0))
    draft_digest(topic, DAY)
    first.refresh_from_db()
    assert first.generated_at > at(0)
    assert first.opened_at is None  # generating is not opening
