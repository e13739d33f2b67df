"""The seed import: every element of the design documents lands, exactly, and only once."""
import filecmp
from pathlib import Path

import pytest
from django.conf import settings
from django.core.management import CommandError, call_command

from blog.models import Author, Post
from demo.posts import split_tags
from digests.models import Digest, Reference, Repository
from demo.wire import SeedFormatError, parse_pull_request_page, parse_wire_digest
from tests.conftest import SHARED_DIR

SEEDS = Path(settings.SEEDS_DIR)
HEADLINE_0629 = (
    "EXECUTORCH FLASHDECODING LANDS, INDUCTOR FIXES BACKWARD CRASH, TORCHTITAN RL PIPELINE GETS WEIGHT SYNC OVERLAP"
)
HEADLINE_0611 = "TORCHTITAN SHIPS FLEXATTENTION INDUCTOR BOOST, GRAPH TRAINER UNLOCKS CPU OFFLOADING"


@pytest.fixture
def imported(db):
    call_command("import_seeds", verbosity=0)


def test_vendored_seeds_match_shared_ones():
    if not (SHARED_DIR / "seeds").is_dir():
        pytest.skip("../shared/seeds is not beside this checkout; nothing to compare the vendored copy with")
    names = sorted(path.name for path in (SHARED_DIR / "seeds").glob("*.txt"))
    assert names == sorted(path.name for path in SEEDS.glob("*.txt"))
    match, mismatch, errors = filecmp.cmpfiles(SHARED_DIR / "seeds", SEEDS, names, shallow=False)
    assert (mismatch, errors) == ([], [])


def test_both_digests_are_published_with_their_headlines(imported):
    digests = {d.date.isoformat(): d for d in Digest.objects.published()}
    assert set(digests) == {"2026-06-29", "2026-06-11"}
    assert digests["2026-06-29"].headline == HEADLINE_0629
    assert digests["2026-06-11"].headline == HEADLINE_0611
    for digest in digests.values():
        assert digest.kicker == "The Wire · Showcase"
        assert digest.byline == "RepoJournal"
        assert digest.topic.name == "PyTorch"
        assert digest.citation_report().missing == []


def test_digest_text_and_citations(imported):
    digest = Digest.objects.get(date="2026-06-29")
    assert digest.summary.startswith("ExecuTorch shipped FlashDecoding by default for WebGPU decode operations [ref:1]")
    assert digest.body.endswith("Ignite picked up CharacterErrorRate metric for ASR and OCR evaluation [11][12].")
    assert 'href="#ref-3"' in digest.summary_html
    assert 'href="#ref-12"' in digest.body_html


def test_action_items_keep_order_repository_and_priority(imported):
    items = Digest.objects.get(date="2026-06-29").action_items.select_related("repository")
    assert [(i.repository.full_name, i.priority) for i in items] == [
        ("pytorch/executorch", "plan"),
        ("pytorch/pytorch", "immediate"),
        ("pytorch/torchtitan", "plan"),
    ]
    assert items[1].text == (
        "If using torch.compile in multi-frame training: apply Inductor registry fix immediately "
        "to prevent silent backward failures"
    )
    items = Digest.objects.get(date="2026-06-11").action_items.select_related("repository")
    assert [(i.repository.full_name, i.priority) for i in items] == [
        ("pytorch/torchtitan", "plan"),
        ("pytorch/torchtitan", "plan"),
        ("pytorch/pytorch", "immediate"),
    ]


def test_references_are_numbered_with_kind_title_and_repository(imported):
    cited = list(Digest.objects.get(date="2026-06-29").digest_references.select_related("reference__repository"))
    assert [c.number for c in cited] == list(range(1, 13))
    first, second, third = (c.reference for c in cited[:3])
    assert (first.kind, first.number, first.repository.full_name) == ("pull_request", 20544, "pytorch/executorch")
    assert first.title == "[ExecuTorch][WebGPU] Enable FlashDecoding by default for decode SDPA (runtime shape gate)"
    assert (second.kind, second.number) == ("commit", 20586)
    assert third.display_title == "[Inductor] Restore external object registry before backward (#186025)"
    assert third.url == "https://github.com/pytorch/pytorch/pull/186025"
    assert [c.reference.repository.full_name for c in cited][-2:] == ["pytorch/ignite", "pytorch/ignite"]
    june_11 = Digest.objects.get(date="2026-06-11").digest_references.select_related("reference")
    assert [c.reference.title for c in june_11][3] == "Add a router for multiple generators"
    assert june_11.count() == 8


def test_faq_entries_as_in_the_seeds(imported):
    faq = Digest.objects.get(date="2026-06-29").faq()
    assert [q for q, _ in faq] == [
        "What changed in PyTorch on June 29, 2026?",
        "What should PyTorch teams do about it?",
        "Which PyTorch repositories shipped on June 29, 2026?",
    ]
    assert faq[2][1] == "pytorch/executorch, pytorch/pytorch, pytorch/torchtitan, pytorch/ignite"
    assert faq[1][1].startswith("If running ExecuTorch on WebGPU: verify FlashDecoding is enabled")
    june_11 = Digest.objects.get(date="2026-06-11")
    assert june_11.faq()[2] == ("Which PyTorch repositories shipped on June 11, 2026?", "pytorch/torchtitan, pytorch/pytorch")


def test_pull_request_page_becomes_a_reference_with_its_body(imported):
    reference = Reference.objects.get(repository__full_name="pytorch/executorch", kind="pull_request", key="20544")
    assert reference.author_login == "JulianCloudNTH"
    assert reference.state == "open"
    assert reference.opened_at.date().isoformat() == "2026-06-26"
    assert reference.url == "https://github.com/pytorch/executorch/pull/20544"
    assert reference.body.startswith("Stack from ghstack (oldest at bottom):")
    assert reference.body.endswith("[ghstack-poisoned]")
    assert "pytorch-bot" not in reference.body  # the first bot comment is not part of the body
    assert "- Before: EXECUTORCH_BUILD_WEBGPU_SDPA_FD default OFF" in reference.body
    assert "<li>Before:" in reference.body_html


def test_fourteen_posts_with_ordered_authors_tags_and_disclosures(imported):
    posts = list(Post.objects.published().with_listing_data())
    assert len(posts) == 14
    by_slug = {post.slug: post for post in posts}
    rl = by_slug["torch-compile-torchtitan-rl"]
    assert [(a.name, a.handle) for a in rl.ordered_authors()] == [
        ("Lucas Kabela", "lucaskabela"), ("Jiani Wang", ""), ("Tianyu Liu", ""),
        ("Richard Zou", "zou3519"), ("Joe Cummings", ""), ("Milad Mohammadi", ""),
    ]
    assert sorted(t.name for t in rl.tags.all()) == ["distributed", "performance", "rl", "torch.compile", "torchtitan"]
    skill = by_slug["debug-graph-breaks-skill"]
    assert sorted(t.name for t in skill.tags.all()) == ["dynamo", "graph-breaks", "skills", "torch.compile"]
    cuda = by_slug["cuda-caching-allocator-fragmentation"]
    assert cuda.disclosure == (
        "Disclosure. This post was drafted by Claude (Anthropic’s coding assistant) with editing from ezyang."
    )
    assert cuda.published_at.date().isoformat() == "2026-06-01"
    assert cuda.display_excerpt.endswith("There are many modern use cases …")
    assert [p.slug for p in posts if p.disclosure] == ["cuda-caching-allocator-fragmentation", "mergedog"]
    flux = by_slug["torch-compile-flux-diffusers"]
    assert [a.handle for a in flux.ordered_authors()] == ["sayakpaul", "anijain2305", "BenjaminBossan"]
    assert Author.objects.filter(handle="ezyang").count() == 1
    assert Author.objects.get(handle="ezyang").posts.count() == 4


def snapshot() -> dict:
    """Every imported row's identity and last-modified time, plus the counts of shared rows."""
    return {
        "digests": list(Digest.objects.order_by("pk").values_list("pk", "updated_at")),
        "posts": list(Post.objects.order_by("pk").values_list("pk", "updated_at")),
        "references": list(Reference.objects.order_by("pk").values_list("pk", "updated_at")),
        "repositories": Repository.objects.count(),
        "authors": Author.objects.count(),
    }


def test_reimport_changes_nothing(imported, capsys):
    before = snapshot()
    call_command("import_seeds")
    assert "2 digest unchanged, 14 post unchanged, 1 pull_request unchanged" in capsys.readouterr().out
    after = snapshot()
    assert after == before


def test_reimport_restores_an_edited_digest(imported):
    digest = Digest.objects.get(date="2026-06-11")
    digest.action_items.filter(position=1).update(priority="monitor")
    digest.faq_entries.filter(position=3).delete()
    call_command("import_seeds", verbosity=0)
    assert digest.action_items.get(position=1).priority == "plan"
    assert digest.faq_entries.count() == 3


def test_run_together_tags_need_the_fewest_vocabulary_words():
    vocabulary = ["dynamic_shapes", "unbacked", "backed", "torch.compile", "un"]
    assert split_tags("dynamic_shapesunbackedbackedtorch.compile", vocabulary) == [
        "dynamic_shapes", "unbacked", "backed", "torch.compile",
    ]
    with pytest.raises(SeedFormatError, match="cannot be split"):
        split_tags("dynamomystery", ["dynamo"])


def test_malformed_documents_fail_with_a_message_naming_the_problem():
    with pytest.raises(SeedFormatError, match="kicker"):
        parse_wire_digest("Not a digest\n" * 6)
    digest = (SEEDS / "000_8ef3954005822ae7.txt").read_text()
    with pytest.raises(SeedFormatError, match="Unknown priority \\[someday\\]"):
        parse_wire_digest(digest.replace("[plan]", "[someday]", 1))
    with pytest.raises(SeedFormatError, match="Not a reference"):
        parse_wire_digest(digest.replace("- [3] [Inductor]", "- [3 [Inductor]"))
    with pytest.raises(SeedFormatError, match="not a pull-request page"):
        parse_pull_request_page("Skip to content\nnothing here")


def test_command_reports_a_bad_folder_clearly(db, tmp_path):
    with pytest.raises(CommandError, match="No seed documents"):
        call_command("import_seeds", tmp_path)
    (tmp_path / "x.txt").write_text("Something else entirely\n")
    with pytest.raises(CommandError, match="Unrecognised seed document: x.txt"):
        call_command("import_seeds", tmp_path)
