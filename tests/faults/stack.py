"""The site as production runs it, in processes the fault tests can kill: gunicorn and a Celery worker (with beat).

Production settings, a PostgreSQL cluster and a Redis of the test's own, and
GitHub's API pointed at the test's fake. Nothing supervises the processes but
the tests: restarting the worker after ``kill -9`` is the supervisor's one job
and the test does it; Redis and PostgreSQL restarts are recovered from by the
processes themselves.
"""
import os
import secrets
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import psycopg

from .services import PostgresCluster, RedisServer, free_port, wait_for_port

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
SECRET = "fault-suite-webhook-secret"
REPOSITORY = "Codertocat/Hello-World"
HOOK_ID = 4242


class Stack:
    def __init__(self, directory: Path, github_api_url: str):
        self.directory = directory
        self.redis = RedisServer(directory)
        self.postgres = PostgresCluster(directory)
        self.web_port = free_port()
        self.edge_port = free_port()
        self.web = self.worker = self.edge = None
        self.env = {
            **os.environ,
            "DJANGO_SETTINGS_MODULE": "repojournal.settings.prod",
            "DJANGO_SECRET_KEY": secrets.token_urlsafe(48),
            "DJANGO_ALLOWED_HOSTS": "127.0.0.1,localhost",
            "DATABASE_URL": self.postgres.url,
            "REDIS_URL": self.redis.url,
            "GITHUB_WEBHOOK_SECRET": SECRET,
            "GITHUB_API_URL": github_api_url,
            "GITHUB_TOKEN": "fault-suite-token",
            # Shorter periods than production's minutes, so a test waits seconds (docs/operations.md).
            "INGESTION_SWEEP_AFTER": "20",
            "INGESTION_SWEEP_EVERY": "10",
            "INGESTION_REDELIVERY_EVERY": "10",
            "INGESTION_REDELIVERY_WINDOW": "60",
            "CELERY_SKIP_CHECKS": "1",
        }

    @property
    def webhook_url(self) -> str:
        return f"http://127.0.0.1:{self.web_port}/webhooks/github"

    @property
    def edge_url(self) -> str:
        return f"http://127.0.0.1:{self.edge_port}"

    def manage(self, *args: str) -> str:
        result = subprocess.run([str(BIN / "python"), "manage.py", *args], cwd=ROOT, env=self.env,
                                capture_output=True, text=True, timeout=300)
        assert result.returncode == 0, result.stderr[-3000:]
        return result.stdout

    def setup(self) -> None:
        self.redis.start()
        self.postgres.init()
        self.manage("migrate", "--noinput", "-v0")
        self.manage("shell", "-c", (
            "from digests.models import Repository, Topic; from ingestion.models import TrackedRepository; "
            "topic = Topic.objects.create(name='Hello', slug='hello'); "
            f"repo = Repository.objects.create(full_name='{REPOSITORY}', topic=topic); "
            f"TrackedRepository.objects.create(repository=repo, hook_id={HOOK_ID})"))
        self.start_web()
        self.start_worker()

    def start_web(self) -> None:
        log = open(self.directory / "gunicorn.log", "ab")
        self.web = subprocess.Popen(
            [str(BIN / "gunicorn"), "repojournal.wsgi", "-b", f"127.0.0.1:{self.web_port}", "-w", "4",
             "--timeout", "30"], cwd=ROOT, env=self.env, stdout=log, stderr=subprocess.STDOUT)
        wait_for_port(self.web_port)

    def start_edge(self) -> None:
        """Varnish with the production VCL (deploy/varnish/default.vcl) in front of this stack's gunicorn.

        Started on demand (the load test's); ``deploy/topology.py render`` writes the
        VCL with both backends on this stack's one gunicorn.
        """
        if self.edge is not None:
            return
        env = {**self.env, "TOPOLOGY_DIR": str(self.directory / "edge"), "APP_PORT_1": str(self.web_port),
               "APP_PORT_2": str(self.web_port), "EDGE_LISTEN": f"127.0.0.1:{self.edge_port}"}
        subprocess.run([str(BIN / "python"), "deploy/topology.py", "render"], cwd=ROOT, env=env, check=True)
        log = open(self.directory / "varnish.log", "ab")
        self.edge = subprocess.Popen(
            [shutil.which("varnishd") or "/usr/sbin/varnishd", "-F", "-a", f"127.0.0.1:{self.edge_port}",
             "-f", str(self.directory / "edge" / "default.vcl"), "-n", str(self.directory / "edge" / "varnish"),
             "-s", "malloc,64m", "-T", "127.0.0.1:0", "-j", "none", "-p", "default_grace=0s"],
            stdout=log, stderr=subprocess.STDOUT)
        wait_for_port(self.edge_port)

    def start_worker(self) -> None:
        path = self.directory / "worker.log"
        self._log_lines_at_start = len(path.read_text(errors="replace").splitlines()) if path.exists() else 0
        log = open(path, "ab")
        self.worker = subprocess.Popen(
            [str(BIN / "celery"), "-A", "repojournal", "worker", "-B", "-c", "2", "--loglevel=info",
             "-s", str(self.directory / "beat-schedule")], cwd=ROOT, env=self.env, stdout=log,
            stderr=subprocess.STDOUT)

    def wait_until_worker_ready(self, timeout: float = 120.0) -> None:
        """Until this worker process logs "ready" (its pool is up and it consumes)."""
        deadline = time.monotonic() + timeout
        marker = "celery@"
        while time.monotonic() < deadline:
            if any(marker in line and line.rstrip().endswith("ready.") for line in self.worker_log().splitlines()
                   [self._log_lines_at_start:]):
                return
            time.sleep(0.5)
        raise TimeoutError(f"the worker was not ready within {timeout} s")

    def kill_worker(self) -> None:
        """``kill -9`` of the worker's main process and its pool (the beat runs inside it)."""
        for pid in self.worker_pids():
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        self.worker.wait(timeout=30)

    def worker_pids(self) -> list[int]:
        children = subprocess.run(["pgrep", "-P", str(self.worker.pid)], capture_output=True, text=True).stdout
        return [self.worker.pid, *(int(pid) for pid in children.split())]

    def worker_alive(self) -> bool:
        return self.worker is not None and self.worker.poll() is None

    def stop(self) -> None:
        for process in (self.edge, self.worker, self.web):
            if process and process.poll() is None:
                process.terminate()
                try:
                    process.wait(timeout=20)
                except subprocess.TimeoutExpired:
                    process.kill()
        self.redis.kill()
        self.postgres.stop()

    def query(self, sql: str, *params):
        """Read the site's database directly (the test's view, not the site's)."""
        for _attempt in range(50):
            try:
                with psycopg.connect(self.postgres.url.replace("postgres://", "postgresql://"),
                                     connect_timeout=3) as connection:
                    return connection.execute(sql, params).fetchall()
            except psycopg.OperationalError:
                time.sleep(0.2)
        raise TimeoutError("the test's PostgreSQL did not answer")

    def worker_memory_kib(self) -> int:
        """Resident memory of the worker: its main process and its pool."""
        total = 0
        for pid in self.worker_pids():
            try:
                status = Path(f"/proc/{pid}/status").read_text()
            except FileNotFoundError:
                continue
            total += next(int(line.split()[1]) for line in status.splitlines() if line.startswith("VmRSS:"))
        return total

    def queued_messages(self) -> int:
        """Messages waiting in the broker's default queue (kombu keeps one Redis list per priority step)."""
        import redis

        client = redis.Redis.from_url(self.redis.url)
        return sum(client.llen(key) for key in client.scan_iter(match="celery*", _type="list"))

    def worker_log(self) -> str:
        return (self.directory / "worker.log").read_text(errors="replace")
