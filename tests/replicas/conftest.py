"""A primary, a real streaming replica of it, and the production topology reading from both.

The primary is a PostgreSQL cluster of the test's own (tests/faults/services.py); the topology
is started as `make up REPLICAS=1` starts it (deploy/topology.py): it makes the replica
(deploy/replica.py, ``pg_basebackup -R``) on its own port, then starts Varnish, two gunicorn
instances, the workers and beat with ``DATABASE_REPLICA_URLS`` naming it -- the path real
traffic takes -- and `make down` stops the replica with the rest.
"""
import os
import shutil
import subprocess
import sys
from pathlib import Path

import psycopg
import pytest

from tests.faults.services import free_port, postgres_bin
from tests.faults.stack import ROOT, Stack, running

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
        self.replica_data = directory / "replicas" / str(self.replica_port)
        self.replica_url = self.postgres.url.replace(f":{self.postgres.port}/", f":{self.replica_port}/")
        self.env.update(REPLICAS="1", REPLICA_PORT=str(self.replica_port), REPLICA_DATA_DIR=str(directory / "replicas"))
        self.env["DATABASE_REPLICA_MAX_LAG"] = "5"
        # The load test reads as fast as it can: the API's per-client rates would answer 429 first.
        self.env.update(API_RATE_LIST_IP="1000000/m", API_RATE_LIST_TOKEN="1000000/m")
        self.tokens: list[str] = []

    def setup(self) -> None:
        self.redis.start()
        self.postgres.init()
        self.manage("migrate", "--noinput", "-v0")
        self.tokens = self.manage("shell", "-c", SETUP).splitlines()[-1].split()
        started = self.topology("up", "--no-migrate")
        assert started.returncode == 0, f"{started.stdout}\n{started.stderr}\n{self.supervisorctl('status')}"
        assert self.on_replica("SELECT pg_is_in_recovery()") == [(True,)]

    def stop(self) -> None:
        super().stop()  # `topology down` stops the replica too
        assert not (self.replica_data / "postmaster.pid").exists(), "make down left the replica running"

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
    with running(ReplicatedStack, "repojournal-replicas-") as stack:
        yield stack
