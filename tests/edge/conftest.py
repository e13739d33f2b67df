"""A real edge for tests/edge: Varnish (deploy/varnish/default.vcl) in front of two gunicorn
instances with production settings, two Celery workers and one beat -- the topology `make up`
starts (deploy/topology.py, deploy/supervisord.conf), on free ports, over the test database.

The app processes must share the test's data, so these tests need PostgreSQL and Redis
(DATABASE_URL / REDIS_URL, as CI's second run has them); on SQLite they are skipped. Without
varnishd (Debian: apt-get install varnish varnish-modules; .ci/run installs them) they are
skipped too, saying so.
"""
import os
import shutil
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

PROJECT_DIR = Path(__file__).resolve().parent.parent.parent
TOPOLOGY = PROJECT_DIR / "deploy" / "topology.py"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_for(check, timeout: float, interval: float = 0.1):
    """Call `check` until it returns something true (returned) or `timeout` passes (None)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = check()
        if found:
            return found
        time.sleep(interval)
    return None


@dataclass
class Edge:
    url: str
    app_urls: list[str]
    env: dict[str, str]

    def client(self, **kwargs) -> httpx.Client:
        return httpx.Client(base_url=self.url, timeout=10, **kwargs)

    def supervisorctl(self, *args: str) -> str:
        command = [str(Path(sys.executable).parent / "supervisorctl"), "-c", str(PROJECT_DIR / "deploy" / "supervisord.conf")]
        return subprocess.run([*command, *args], env=self.env, capture_output=True, text=True).stdout


def requirements_missing() -> str | None:
    if not shutil.which("varnishd"):
        return "varnishd is not installed (apt-get install varnish varnish-modules; .ci/run installs them)"
    if not os.environ.get("DATABASE_URL", "").startswith(("postgres://", "postgresql://")):
        return "the edge's app processes share the test database: needs PostgreSQL (DATABASE_URL)"
    if not os.environ.get("REDIS_URL"):
        return "the edge's workers and beat need a broker: needs Redis (REDIS_URL)"
    return None


def topology_env(tmp: Path, database_name: str) -> dict[str, str]:
    database_url = os.environ["DATABASE_URL"].rsplit("/", 1)[0] + f"/{database_name}"
    edge_port, app1, app2 = free_port(), free_port(), free_port()
    return {
        **os.environ,
        "TOPOLOGY_DIR": str(tmp),
        "EDGE_LISTEN": f"127.0.0.1:{edge_port}",
        "APP_PORT_1": str(app1),
        "APP_PORT_2": str(app2),
        "MAIL_CATCHER_PORT": str(free_port()),
        "DATABASE_URL": database_url,
        "GUNICORN_WORKERS": "2",
        "CELERY_CONCURRENCY": "1",
        "VARNISH_MEMORY": "64m",
        "VARNISH_JAIL": "none",  # pytest's temporary folders are private to this user
        "DJANGO_SETTINGS_MODULE": "repojournal.settings.prod",
        "DJANGO_STATIC_ROOT": str(tmp / "static"),  # collectstatic's output, not the checkout's staticfiles/
    }


@pytest.fixture(scope="session")
def test_database(django_db_setup, django_db_blocker):
    """The test database, also when no collected test asks for `db` (``pytest tests/edge`` alone).

    pytest-django creates test databases only for the aliases some collected test needs; these
    tests never ask (their rows must be committed for the app processes), so run alone they
    would point the topology at the database DATABASE_URL names itself, not a test copy.
    """
    from django.db import connection
    from django.test.utils import setup_databases, teardown_databases

    if connection.settings_dict["NAME"] == connection.creation._get_test_db_name():
        yield  # another test of the session asked for it: pytest-django made it
        return
    with django_db_blocker.unblock():
        config = setup_databases(verbosity=0, interactive=False, aliases={"default"})
    yield
    with django_db_blocker.unblock():
        teardown_databases(config, verbosity=0)


@pytest.fixture(scope="session")
def edge(test_database, django_db_blocker, tmp_path_factory):
    """The running topology; stopped before the test database is dropped."""
    reason = requirements_missing()
    if reason:
        pytest.skip(reason)
    from django.db import connection

    env = topology_env(tmp_path_factory.mktemp("topology"), connection.settings_dict["NAME"])
    env.pop("DJANGO_SECRET_KEY", None)
    started = subprocess.run([sys.executable, str(TOPOLOGY), "up", "--no-migrate"], env=env, capture_output=True, text=True)
    running = Edge(
        url=f"http://{env['EDGE_LISTEN']}",
        app_urls=[f"http://127.0.0.1:{env['APP_PORT_1']}", f"http://127.0.0.1:{env['APP_PORT_2']}"],
        env={**env, "DJANGO_SECRET_KEY": (Path(env["TOPOLOGY_DIR"]) / "secret_key").read_text()},
    )
    try:
        assert started.returncode == 0, f"{started.stdout}\n{started.stderr}\n{running.supervisorctl('status')}"
        yield running
    finally:
        subprocess.run([sys.executable, str(TOPOLOGY), "down"], env=env, capture_output=True)
        # The app processes' connections must be gone before pytest-django drops the database.
        with django_db_blocker.unblock():
            connection.close()
