"""One production-like stack for the fault tests (tests/faults/stack.py), and GitHub's fake in front of it."""
import os
import shutil

import pytest

from .github_fake import FakeGitHub
from .services import postgres_bin
from .stack import HOOK_ID, REPOSITORY, SECRET, Stack, running


def pytest_collection_modifyitems(items):
    for item in items:
        if "tests/faults/" in str(item.fspath):
            item.add_marker(pytest.mark.faults)


@pytest.fixture(scope="package")
def stack(make_httpserver):
    """Stopped once tests/faults is done: its worker's beat calls GitHub's API, which here is the
    suite's shared HTTP server, and later tests count the requests that server gets."""
    if not os.environ.get("REDIS_URL"):
        pytest.skip("the fault suite runs in the PostgreSQL + Redis pass only (it brings its own services)")
    if not shutil.which("redis-server") or postgres_bin() is None:
        pytest.skip("needs redis-server and PostgreSQL's initdb/pg_ctl")
    with running(lambda directory: Stack(directory, make_httpserver.url_for("/").rstrip("/")), "repojournal-faults-") as stack:
        yield stack


@pytest.fixture
def github(httpserver, stack):
    fake = FakeGitHub(httpserver, repo=REPOSITORY, hook_id=HOOK_ID, target=stack.webhook_url, secret=SECRET)
    yield fake
    fake.wait_for_redeliveries()
