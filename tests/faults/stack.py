"""The site as `make up` runs it, on services the fault tests can kill: the production topology.

deploy/topology.py starts supervisord with Varnish (the production VCL), two gunicorn
instances, two Celery workers and one beat -- the path real traffic takes -- on free ports,
over a PostgreSQL cluster and a Redis of the test's own (tests/faults/services.py), with
GitHub's API pointed at the test's fake. GitHub's deliveries go through the edge, as they
reach a deployed site. Nothing restarts a killed worker but supervisord, and nothing brings
the site back after Redis or PostgreSQL returns but the processes themselves.

The beat runs the production schedule, with one exception: the redelivery task runs every
10 s instead of every 5 minutes (``INGESTION_REDELIVERY_EVERY``), so the PostgreSQL test asks
GitHub again within seconds; production's time is that period plus the measured recovery.
"""
import contextlib
import os
import re
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psycopg

from .services import PostgresCluster, RedisServer, free_port, wait_for_port

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
SECRET = "fault-suite-webhook-secret"
REPOSITORY = "Codertocat/Hello-World"
HOOK_ID = 4242
WORKERS = ("worker1", "worker2")


class Stack:
    def __init__(self, directory: Path, github_api_url: str):
        self.directory = directory
        self.redis = RedisServer(directory)
        self.postgres = PostgresCluster(directory)
        self.edge_port = free_port()
        self.topology_dir = directory / "topology"
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
            "INGESTION_REDELIVERY_EVERY": "10",
            "INGESTION_REDELIVERY_WINDOW": "60",
            "TOPOLOGY_DIR": str(self.topology_dir),
            "EDGE_LISTEN": f"127.0.0.1:{self.edge_port}",
            "APP_PORT_1": str(free_port()),
            "APP_PORT_2": str(free_port()),
            "MAIL_CATCHER_PORT": str(free_port()),
            "GUNICORN_WORKERS": "2",
            "CELERY_CONCURRENCY": "1",
            "VARNISH_MEMORY": "64m",
            "VARNISH_JAIL": "none",  # the test's temporary folder is private to this user
            "DJANGO_STATIC_ROOT": str(directory / "static"),
        }
        for name in ("INGESTION_SWEEP_AFTER", "INGESTION_SWEEP_EVERY"):  # production's, whatever the caller has
            self.env.pop(name, None)
        self._log_offsets: dict[str, int] = {}

    @property
    def edge_url(self) -> str:
        return f"http://127.0.0.1:{self.edge_port}"

    @property
    def webhook_url(self) -> str:
        """Where GitHub sends: the edge, as on a deployed site."""
        return f"{self.edge_url}/webhooks/github"

    def manage(self, *args: str) -> str:
        result = subprocess.run([str(BIN / "python"), "manage.py", *args], cwd=ROOT, env=self.env,
                                capture_output=True, text=True, timeout=300)
        assert result.returncode == 0, result.stderr[-3000:]
        return result.stdout

    def topology(self, command: str, *args: str) -> subprocess.CompletedProcess:
        return subprocess.run([str(BIN / "python"), "deploy/topology.py", command, *args], cwd=ROOT, env=self.env,
                              capture_output=True, text=True, timeout=300)

    def setup(self) -> None:
        self.redis.start()
        self.postgres.init()
        self.manage("migrate", "--noinput", "-v0")
        self.manage("shell", "-c", (
            "from digests.models import Repository, Topic; from ingestion.models import TrackedRepository; "
            "topic = Topic.objects.create(name='Hello', slug='hello'); "
            f"repo = Repository.objects.create(full_name='{REPOSITORY}', topic=topic); "
            # Polled a moment ago and not again for a month: the fake GitHub speaks the hook-deliveries API
            # only, and a poll answered 500 would hold a worker in its backoff for minutes.
            "from datetime import timedelta; from django.utils import timezone; "
            f"TrackedRepository.objects.create(repository=repo, hook_id={HOOK_ID}, last_polled_at=timezone.now(), "
            "poll_interval=timedelta(days=30))"))
        self.mark_logs()
        started = self.topology("up", "--no-migrate")  # collects static files: pages link the manifest's names
        assert started.returncode == 0, f"{started.stdout}\n{started.stderr}\n{self.supervisorctl('status')}"
        wait_for_port(self.edge_port)
        self.wait_until_workers_ready()

    def stop(self) -> None:
        self.topology("down")
        self.redis.kill()
        self.postgres.stop()

    # --- supervisord's programs ---
    def supervisorctl(self, *args: str) -> str:
        command = [str(BIN / "supervisorctl"), "-c", str(ROOT / "deploy" / "supervisord.conf"), *args]
        return subprocess.run(command, env=self.env, capture_output=True, text=True).stdout

    def program_pid(self, program: str) -> int:
        output = self.supervisorctl("pid", program).strip()
        return int(output) if output.isdigit() else 0

    def worker_pids(self) -> list[int]:
        """Both workers' main processes and their pools."""
        pids = []
        for program in WORKERS:
            pid = self.program_pid(program)
            if pid:
                children = subprocess.run(["pgrep", "-P", str(pid)], capture_output=True, text=True).stdout
                pids += [pid, *(int(child) for child in children.split())]
        return pids

    def kill_workers(self, pids: list[int] | None = None) -> None:
        """``kill -9`` of every worker process, pools included (beat, a program of its own, keeps running).

        ``pids``: read beforehand (``worker_pids`` asks supervisorctl, which takes a while), so the
        kill lands at the moment the caller chose."""
        pids = pids or self.worker_pids()
        self.mark_logs()
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass

    def workers_running(self) -> dict[str, int]:
        """program -> pid of each worker supervisord reports RUNNING (0 if none)."""
        return {program: self.program_pid(program) for program in WORKERS}

    # --- logs ---
    def log_path(self, program: str) -> Path:
        return self.topology_dir / "logs" / f"{program}.log"

    def mark_logs(self) -> None:
        """Remember where each worker's log ends: ``wait_until_workers_ready`` reads what follows."""
        for program in WORKERS:
            path = self.log_path(program)
            self._log_offsets[program] = path.stat().st_size if path.exists() else 0

    def wait_until_workers_ready(self, timeout: float = 120.0) -> None:
        """Until each worker logged "ready" since the last mark (its pool is up and it consumes)."""
        deadline = time.monotonic() + timeout
        ready = re.compile(r"\w+@\S+ ready\.")
        while time.monotonic() < deadline:
            if all(ready.search(self.log_since_mark(program)) for program in WORKERS):
                return
            time.sleep(0.5)
        raise TimeoutError(f"the workers were not ready within {timeout} s:\n{self.supervisorctl('status')}")

    def log_since_mark(self, program: str) -> str:
        path = self.log_path(program)
        if not path.exists():
            return ""
        with path.open("rb") as log:
            log.seek(self._log_offsets.get(program, 0))
            return log.read().decode(errors="replace")

    def worker_log(self) -> str:
        """Both workers' logs and beat's, one after the other."""
        return "\n".join(self.log_path(program).read_text(errors="replace")
                         for program in (*WORKERS, "beat") if self.log_path(program).exists())

    # --- what the test reads ---
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
        """Resident memory of the workers: their main processes and pools."""
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


@contextlib.contextmanager
def running(make, prefix: str):
    """A stack made by ``make(directory)`` in a new temporary directory, set up, then stopped and removed
    (kept with FAULTS_KEEP=1, to read its logs)."""
    directory = Path(tempfile.mkdtemp(prefix=prefix))
    directory.chmod(0o755)  # the clusters run as postgres, which must reach their data directories
    stack = make(directory)
    try:
        stack.setup()
        yield stack
    finally:
        stack.stop()
        if not os.environ.get("FAULTS_KEEP"):
            shutil.rmtree(directory, ignore_errors=True)
