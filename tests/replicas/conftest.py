"""A primary, a real streaming replica of it, and the production topology reading from both.

The primary is a PostgreSQL cluster of the test's own (tests/faults/services.py); the replica
is made from it by deploy/replica.py, as `make up REPLICAS=1` makes one (``pg_basebackup -R``),
on its own port; deploy/topology.py starts Varnish, two gunicorn instances, the workers and
beat with ``DATABASE_REPLICA_URLS`` naming the replica -- the path real traffic takes.
"""
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import psycopg
import pytest

from tests.faults.services import free_port, postgres_bin
from tests.faults.stack import ROOT, Stack

#: What the tests act with: a Publisher's token (writes), another Publisher's (reads only), one digest.
SETUP = """
from django.contrib.auth.models import Group, User
from accounts.models import ApiToken
from digests.models import Topic
Topic.objects.create(name="PyTorch", slug="pytorch")
publishers = Group.objects.get(name="Publishers")
tokens = []
for name in ("writer", "reader"):
    user = User.objects.create_user(name, password="a long test password 1", is_staff=True)
    user.groups.add(publishers)
    tokens.append(ApiToken.issue(user, name, ["read:drafts", "write:content", "publish"])[1])
print(" ".join(tokens))
"""


class ReplicatedStack(Stack):
    """The fault suite's stack (tests/faults/stack.py) with a streaming replica beside its PostgreSQL."""

    def __init__(self, directory: Path):
        super().__init__(directory, github_api_url="http://127.0.0.1:9")  # nothing here asks GitHub
        self.replica_port = free_port()
        self.replica_data = directory / "replica"
        self.replica_url = self.postgres.url.replace(f":{self.postgres.port}/", f":{self.replica_port}/")
        self.env["DATABASE_REPLICA_URLS"] = self.replica_url
        self.env["DATABASE_REPLICA_MAX_LAG"] = "5"
        # The load test reads as fast as it can: the API's per-client rates would answer 429 first.
        self.env.update(API_RATE_LIST_IP="1000000/m", API_RATE_LIST_TOKEN="1000000/m")
        self.tokens: list[str] = []

    def setup(self) -> None:
        self.redis.start()
        self.postgres.init()
        self.manage("migrate", "--noinput", "-v0")
        self.tokens = self.manage("shell", "-c", SETUP).splitlines()[-1].split()
        self.replica("start", "--primary", self.postgres.url, "--port", str(self.replica_port))
        started = self.topology("up", "--no-migrate")
        assert started.returncode == 0, f"{started.stdout}\n{started.stderr}\n{self.supervisorctl('status')}"

    def stop(self) -> None:
        super().stop()
        self.replica("stop")

    def replica(self, command: str, *args: str) -> None:
        result = subprocess.run([sys.executable, str(ROOT / "deploy" / "replica.py"), command, "--data",
                                 str(self.replica_data), *args], capture_output=True, text=True, timeout=300)
        assert result.returncode == 0, result.stdout + result.stderr

    def on_replica(self, sql: str):
        with psycopg.connect(self.replica_url.replace("postgres://", "postgresql://"), autocommit=True) as connection:
            return connection.execute(sql).fetchall()

    @property
    def app_url(self) -> str:
        return f"http://127.0.0.1:{self.env['APP_PORT_1']}"


@pytest.fixture(scope="package")
def replicated():
    if not os.environ.get("REDIS_URL"):
        pytest.skip("the replica tests run in the PostgreSQL + Redis pass only (they bring their own clusters)")
    if postgres_bin() is None or not shutil.which("varnishd"):
        pytest.skip("needs PostgreSQL's server programs (initdb, pg_basebackup) and varnishd")
    directory = Path(tempfile.mkdtemp(prefix="repojournal-replicas-"))
    directory.chmod(0o755)  # the clusters run as postgres, which must reach their data directories
    running = ReplicatedStack(directory)
    try:
        running.setup()
        yield running
    finally:
        running.stop()
        shutil.rmtree(directory, ignore_errors=True)
