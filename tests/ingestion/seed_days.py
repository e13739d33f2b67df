"""The published seed days (demo/seeds/000_*, 001_*) replayed as GitHub would deliver them.

Each change the seed digest cites becomes a ``pull_request`` "closed" (merged)
delivery derived from the recorded payload in tests/fixtures/github/webhooks,
and each commit the seed cites as "Title (#N)" a ``push`` to the default branch
derived from the recorded push payload, its id being the PR's merge commit SHA
-- the shapes GitHub really sends. One more commit lands a PR by SHA only (no
"(#N)" in its message). Labels and sizes, which the seed text does not give,
are chosen to mirror the seed editors' judgement (their action-item priorities).
Deliveries go through the real endpoint (signed) and ``process_delivery``.
"""
import copy
import datetime
import hashlib
from pathlib import Path

import demo
from demo.wire import parse_wire_digest
from digests.factories import RepositoryFactory, TopicFactory
from digests.models import Topic
from ingestion.deliveries import process_delivery
from ingestion.drafting_changes import clean_title
from ingestion.models import TrackedRepository, WebhookDelivery

from .conftest import fixture_payload

SEEDS = ["000_8ef3954005822ae7.txt", "001_54368d6fe217c462.txt"]
#: title (cleaned) -> (labels, additions, deletions, changed_files); anything else keeps the recording's sizes.
GITHUB_FACTS = {
    "Restore external object registry before backward": (["module: inductor", "security"], 64, 12, 3),
    "Enable FlashDecoding by default for decode SDPA (runtime shape gate)": (["release notes: webgpu"], 420, 35, 6),
    "Upgrade DeepEP to DeepEP v2 APIs, enabling cudagraphable mode": (["release notes: rl"], 310, 190, 9),
    "Overlap trainer->generator weight sync with the next training step": (["enhancement"], 150, 40, 4),
    "Faster Cholesky via panel factorization with matmul2d trailing update": (["release notes: mps"], 240, 30, 2),
    "Fix build_with_debinfo.py broken by CONFIGURE_DEPENDS globbing": (["module: build", "bc-breaking"], 18, 6, 1),
    "Enable regional_inductor in FlexAttention": (["release notes: rl"], 85, 10, 3),
    "Add view replay for CPU activation offloading": (["enhancement"], 260, 20, 5),
    "evolve qwen3_vl to qwen3_5": (["release notes: models"], 2400, 300, 31),
}
SHA_ONLY = "Overlap trainer->generator weight sync with the next training step"  # its commit says no "(#N)"


def seed_digest(name: str):
    return parse_wire_digest((Path(demo.__file__).resolve().parent / "seeds" / name).read_text())


def merge_sha(repository: str, number: int) -> str:
    return hashlib.sha1(f"{repository}#{number}".encode()).hexdigest()


def seed_changes(seed) -> list[dict]:
    """One dict per change the seed cites: repository, number, title, and whether a commit landed it."""
    changes: dict[tuple[str, str], dict] = {}
    for reference in seed.references:
        key = (reference.repository, clean_title(reference.title))
        change = changes.setdefault(key, {"repository": reference.repository, "title": None, "number": None,
                                          "commit": False})
        if reference.pr_number:
            change["number"], change["commit"] = reference.pr_number, True
            change["title"] = change["title"] or reference.title.removesuffix(f" (#{reference.pr_number})")
        else:
            change["title"] = reference.title
    for index, change in enumerate(changes.values(), start=1):
        change["number"] = change["number"] or 90000 + index
        change["commit"] = change["commit"] or clean_title(change["title"]) == SHA_ONLY
    return list(changes.values())


def _at(day: datetime.date, minute: int) -> str:
    return datetime.datetime.combine(day, datetime.time(9, minute), tzinfo=datetime.UTC).isoformat()


def pull_request_payload(change: dict, day: datetime.date, minute: int) -> dict:
    payload = copy.deepcopy(fixture_payload("pull_request.closed"))
    repository, number = change["repository"], change["number"]
    labels, additions, deletions, files = GITHUB_FACTS.get(clean_title(change["title"]), ([], None, None, None))
    pull = payload["pull_request"]
    pull.update(
        number=number, title=change["title"], merged=True, merged_at=_at(day, minute), updated_at=_at(day, minute),
        merge_commit_sha=merge_sha(repository, number), html_url=f"https://github.com/{repository}/pull/{number}",
        labels=[{"name": label} for label in labels],
    )
    if additions is not None:
        pull.update(additions=additions, deletions=deletions, changed_files=files)
    payload["number"] = number
    payload["repository"].update(full_name=repository, name=repository.split("/")[1])
    return payload


def push_payload(change: dict, day: datetime.date, minute: int) -> dict:
    payload = copy.deepcopy(fixture_payload("push"))
    commit = copy.deepcopy(fixture_payload("push.with-new-branch")["commits"][0])
    repository, sha = change["repository"], merge_sha(change["repository"], change["number"])
    by_sha_only = clean_title(change["title"]) == SHA_ONLY
    commit.update(id=sha, timestamp=_at(day, minute), url=f"https://github.com/{repository}/commit/{sha}",
                  message=change["title"] + ("" if by_sha_only else f" (#{change['number']})") + "\n\nLanded.")
    payload.update(ref="refs/heads/main", before="1" * 40, after=sha, created=False, deleted=False,
                   commits=[commit], head_commit=commit)
    payload["repository"].update(full_name=repository, name=repository.split("/")[1], default_branch="main")
    return payload


def deliver_seed_day(post_webhook, seed) -> Topic:
    """Track the seed's repositories and deliver its day's changes; returns the topic."""
    topic = Topic.objects.filter(slug="pytorch").first() or TopicFactory(name=seed.topic, slug="pytorch")
    changes = seed_changes(seed)
    for full_name in dict.fromkeys(change["repository"] for change in changes):
        repository = RepositoryFactory(full_name=full_name, topic=topic)
        TrackedRepository.objects.get_or_create(repository=repository)
    for minute, change in enumerate(changes):
        assert post_webhook("pull_request", pull_request_payload(change, seed.date, minute)).status_code == 202
        if change["commit"]:
            assert post_webhook("push", push_payload(change, seed.date, minute)).status_code == 202
    for delivery in WebhookDelivery.objects.filter(state=WebhookDelivery.State.PENDING).order_by("pk"):
        process_delivery(delivery.pk)
        delivery.refresh_from_db()
        assert delivery.state == WebhookDelivery.State.PROCESSED, delivery.detail
    return topic
