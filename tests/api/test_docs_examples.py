"""Every ```bash block in docs/api.md, run with curl against a live server, in order.

Each block states the status it must end with (``# expect: NNN``); the blocks
use $API and $TOKEN like a reader would.
"""
import datetime
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from accounts.models import ApiToken
from blog.factories import PostFactory
from digests.factories import ActionItemFactory, DigestFactory, RepositoryFactory, TopicFactory

DOC = Path(__file__).resolve().parents[2] / "docs" / "api.md"
BLOCK = re.compile(r"```bash\n(.*?)```", re.S)
EXPECT = re.compile(r"^# expect: (\d{3})$", re.M)
STATUS_LINE = re.compile(r"^HTTP/[\d.]+ (\d{3})", re.M)


def examples() -> list[tuple[str, int]]:
    blocks = BLOCK.findall(DOC.read_text())
    return [(block, int(EXPECT.search(block).group(1))) for block in blocks]


def test_every_example_states_its_expected_status():
    blocks = BLOCK.findall(DOC.read_text())
    assert len(blocks) >= 10
    assert all(EXPECT.search(block) for block in blocks)


@pytest.fixture
def demo_content(db):
    topic = TopicFactory(slug="pytorch", name="PyTorch")
    torchtitan = RepositoryFactory(full_name="pytorch/torchtitan", topic=topic)
    digest = DigestFactory(topic=topic, date=datetime.date(2026, 5, 1), slug="pytorch-2026-05-01")
    ActionItemFactory(digest=digest, repository=torchtitan, priority="immediate")
    DigestFactory(topic=topic, date=datetime.date(2026, 5, 2))
    PostFactory(tags=["pytorch", "compilers"])


@pytest.mark.skipif(shutil.which("curl") is None, reason="the examples are curl commands; CI installs curl")
@pytest.mark.django_db(transaction=True)
def test_curl_examples_run_against_a_live_server(live_server, demo_content, editor):
    token = ApiToken.issue(editor, "docs", ["read:drafts", "write:content"])[1]
    env = {**os.environ, "API": f"{live_server.url}/api/v1", "TOKEN": token}
    for script, expected in examples():
        result = subprocess.run(
            ["bash", "-eo", "pipefail", "-c", script], env=env, capture_output=True, text=True, timeout=30
        )
        assert result.returncode == 0, f"{script}\n{result.stderr}"
        statuses = [int(code) for code in STATUS_LINE.findall(result.stdout)]
        assert statuses and statuses[-1] == expected, f"{script}\n--> {result.stdout[:2000]}"
