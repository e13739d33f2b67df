"""Fixtures for the reader-site tests: published content plus one item in every hidden state."""
import datetime
from dataclasses import dataclass, field

import pytest
from django.utils import timezone

from blog.factories import AuthorFactory, PostFactory
from digests.factories import (
    ActionItemFactory,
    DigestFactory,
    DigestReferenceFactory,
    FAQEntryFactory,
    ReferenceFactory,
    RepositoryFactory,
    TopicFactory,
)
from publishing.workflow import Status

FUTURE = datetime.timedelta(days=3)


@pytest.fixture(autouse=True)
def render_every_request(settings):
    """These tests measure what the views render and query, so whole-page caching (issue 6) is off here;
    the cache's own tests cover serving and invalidating cached pages."""
    settings.PAGE_CACHE_ENABLED = False


def hidden_states():
    """(label, factory kwargs) for every way content can be unpublished."""
    return [
        ("draft", {"status": Status.DRAFT, "published_at": None}),
        ("review", {"status": Status.IN_REVIEW, "published_at": None}),
        ("scheduled", {"status": Status.PUBLISHED, "published_at": timezone.now() + FUTURE}),
        ("archived", {"status": Status.ARCHIVED, "published_at": timezone.now() - FUTURE}),
    ]


def make_digest(topic, repositories, n_refs=2, **kwargs):
    """A digest citing `n_refs` references spread over `repositories`, with action items."""
    digest = DigestFactory(topic=topic, **kwargs)
    for number in range(1, n_refs + 1):
        repository = repositories[(number - 1) % len(repositories)]
        DigestReferenceFactory(
            digest=digest, number=number,
            reference=ReferenceFactory(repository=repository, title=f"{digest.headline} change {number}"),
        )
    for position, repository in enumerate(repositories[:2], start=1):
        ActionItemFactory(digest=digest, repository=repository, position=position, text=f"{digest.headline} action {position}")
    return digest


@dataclass
class SiteContent:
    topic: object
    repositories: list
    digests: list = field(default_factory=list)
    posts: list = field(default_factory=list)
    authors: list = field(default_factory=list)
    hidden_digests: dict = field(default_factory=dict)
    hidden_posts: dict = field(default_factory=dict)


@pytest.fixture
def site(db):
    """Published digests and posts, and for each hidden state a digest and a post with unique words.

    Each hidden item has its own topic/repository/author/tag that nothing
    published uses, so a page that leaks them can be caught by name.
    """
    topic = TopicFactory(name="PyTorch", slug="pytorch", description="The PyTorch family of repositories.")
    repositories = [RepositoryFactory(full_name=name, topic=topic) for name in ("pytorch/executorch", "pytorch/pytorch")]
    content = SiteContent(topic=topic, repositories=repositories)
    for day in range(3):
        content.digests.append(
            make_digest(topic, repositories, headline=f"Published headline {day}", date=datetime.date(2026, 6, 10 + day),
                        summary=f"Published summary {day} cites [ref:1] and [2].")
        )
    ezyang = AuthorFactory(name="Edward Yang", handle="ezyang", slug="edward-yang", bio="Works on PyTorch.")
    jiani = AuthorFactory(name="Jiani Wang", handle="", slug="jiani-wang")
    content.authors = [ezyang, jiani]
    content.posts.append(PostFactory(title="Eager CUDA memory", slug="eager-cuda-memory", authors=[ezyang],
                                     tags=["eager", "cuda", "memory"],
                                     disclosure="Disclosure. This post was drafted by Claude with editing from ezyang."))
    content.posts.append(PostFactory(title="RL with torch.compile", slug="rl-compile", authors=[jiani, ezyang],
                                     tags=["cuda", "rl"], body="A *co-authored* post about compile.\n\n```python\nx = 1\n```"))
    for label, state in hidden_states():
        secret_topic = TopicFactory(name=f"Secret{label} topic", slug=f"secret{label}-topic")
        secret_repo = RepositoryFactory(full_name=f"secret{label}/repo", topic=secret_topic)
        content.hidden_digests[label] = make_digest(
            secret_topic, [secret_repo], headline=f"Secret{label} headline", summary=f"Secret{label} summary [1].",
            slug=f"secret{label}-digest", **state,
        )
        secret_author = AuthorFactory(name=f"Secret{label} Author", handle=f"secret{label}", slug=f"secret{label}-author")
        content.hidden_posts[label] = PostFactory(
            title=f"Secret{label} post", slug=f"secret{label}-post", authors=[secret_author, ezyang],
            tags=[f"secret{label}tag", "cuda"], body=f"Secret{label} body words.", **state,
        )
    FAQEntryFactory(digest=content.digests[0], question="What changed in PyTorch?", answer="Edited answer.")
    return content


# --- Tools the browser and validator tests need -----------------------------------------

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]


def ensure_debian_package(command: str, package: str) -> str:
    """The path of `command`, installing Debian's `package` first when it is missing and we are root.

    CI machines are fresh: the suite installs what it needs rather than
    skipping. Without root the test fails, naming the package to install.
    """
    import os
    import shutil
    import subprocess

    found = shutil.which(command)
    if found:
        return found
    if os.geteuid() != 0:
        pytest.fail(f"{command} is missing: install the Debian package {package}")
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    subprocess.run(["apt-get", "update", "-qq"], check=True, env=env, capture_output=True)
    subprocess.run(["apt-get", "install", "-y", "-qq", package], check=True, env=env, capture_output=True)
    return shutil.which(command) or pytest.fail(f"installing {package} did not provide {command}")


@pytest.fixture(scope="session")
def chromium_path():
    return ensure_debian_package(CHROMIUM, "chromium")


@pytest.fixture(scope="session")
def java_path():
    return ensure_debian_package("java", "default-jre-headless")


@pytest.fixture(scope="session")
def artifacts_dir():
    """Screenshots and other test artifacts: test-artifacts/ at the project root (gitignored)."""
    from pathlib import Path

    path = Path(__file__).resolve().parents[2] / "test-artifacts"
    path.mkdir(exist_ok=True)
    return path
