"""Real services for the fault tests, each on a free port and in a directory of its own.

``RedisServer`` and ``PostgresCluster`` can be stopped and started again on the
same port and data, as an operator's restart would; nothing here touches the
system Redis or PostgreSQL.
"""
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def wait_for_port(port: int, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.1)
    raise TimeoutError(f"nothing listens on port {port} after {timeout} s")


class RedisServer:
    """A ``redis-server`` of our own: persistent (an RDB saved on shutdown) like a production one."""

    def __init__(self, directory: Path):
        self.directory, self.port, self.process = directory, free_port(), None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        self.process = subprocess.Popen(
            ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--dir", str(self.directory),
             "--save", "60 1", "--appendonly", "no", "--logfile", str(self.directory / "redis.log")],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_for_port(self.port)

    def stop(self) -> None:
        """SIGTERM: Redis saves its data and exits, as ``systemctl stop`` would."""
        if self.process and self.process.poll() is None:
            self.process.terminate()
            self.process.wait(timeout=30)

    def kill(self) -> None:
        if self.process and self.process.poll() is None:
            self.process.kill()
            self.process.wait(timeout=30)


def postgres_bin() -> Path | None:
    candidates = sorted(Path("/usr/lib/postgresql").glob("*/bin/initdb"), reverse=True)
    return candidates[0].parent if candidates else (Path(shutil.which("initdb")).parent if shutil.which("initdb")
                                                     else None)


class PostgresCluster:
    """A PostgreSQL cluster of our own (``initdb`` + ``pg_ctl``), run as the ``postgres`` user when we are root.

    initdb refuses to run as root, so as root the data directory belongs to
    ``postgres`` and the commands run through ``runuser``.
    """

    def __init__(self, directory: Path):
        self.bin = postgres_bin()
        self.port = free_port()
        self.data = directory / "pgdata"
        self.log = directory / "postgres.log"
        self.user = "postgres" if os.geteuid() == 0 else None

    @property
    def url(self) -> str:
        return f"postgres://postgres@127.0.0.1:{self.port}/repojournal"

    def _run(self, *args: str, check: bool = True) -> subprocess.CompletedProcess:
        command = [str(self.bin / args[0]), *args[1:]]
        if self.user:
            command = ["runuser", "-u", self.user, "--", *command]
        return subprocess.run(command, check=check, capture_output=True, text=True, timeout=120)

    def init(self) -> None:
        self.data.parent.mkdir(parents=True, exist_ok=True)
        if self.user:
            uid = pwd.getpwnam(self.user).pw_uid
            os.chown(self.data.parent, uid, -1)
            self.log.touch()
            os.chown(self.log, uid, -1)
        self._run("initdb", "-D", str(self.data), "-U", "postgres", "--auth=trust", "--no-sync", "-E", "UTF8")
        self.start()
        self._run("createdb", "-h", "127.0.0.1", "-p", str(self.port), "-U", "postgres", "repojournal")

    def start(self) -> None:
        options = f"-p {self.port} -c listen_addresses=127.0.0.1 -k {tempfile.gettempdir()} -c fsync=off"
        self._run("pg_ctl", "-D", str(self.data), "-l", str(self.log), "-o", options, "-w", "start")
        wait_for_port(self.port)

    def stop(self) -> None:
        """A fast shutdown: open connections are cut, as in a restart or a failover."""
        self._run("pg_ctl", "-D", str(self.data), "-m", "fast", "-w", "stop", check=False)
