"""Serving with gunicorn and loading with wrk: the two real programs the numbers come from."""
import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent
PROJECT_DIR = BENCH_DIR.parent
LUA_SCRIPT = BENCH_DIR / "report.lua"
WORKERS = 2
CONNECTIONS = 4


@dataclass
class Load:
    """What wrk measured for one run of one target."""

    requests: int
    seconds: float
    p50_ms: float
    p99_ms: float
    errors: int

    @property
    def rps(self) -> float:
        return self.requests / self.seconds if self.seconds else 0.0


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def require_wrk() -> str:
    """wrk's path; `make bench` installs it (apt-get install wrk) when it is missing."""
    path = shutil.which("wrk")
    if path is None:
        raise SystemExit("wrk is not installed: apt-get install -y wrk (make bench does this).")
    return path


@contextlib.contextmanager
def gunicorn(env: dict[str, str], project_dir: Path = PROJECT_DIR):
    """gunicorn with 2 sync workers on a free port (extra environment `env`), its base URL while the block runs.

    `project_dir` is the checkout whose code it serves (``bench.compare`` serves two side by side).
    """
    port = free_port()
    server_env = {**os.environ, **env}
    command = [
        sys.executable, "-m", "gunicorn", "repojournal.wsgi:application", "--workers", str(WORKERS),
        "--worker-class", "sync", "--bind", f"127.0.0.1:{port}", "--log-level", "warning",
        "--backlog", "2048", "--chdir", str(project_dir),
    ]
    process = subprocess.Popen(command, env=server_env, cwd=project_dir, start_new_session=True)
    base = f"http://127.0.0.1:{port}"
    try:
        wait_until_serving(base, process)
        yield base
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(timeout=30)


def wait_until_serving(base: str, process: subprocess.Popen, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"gunicorn exited with {process.returncode}")
        try:
            with urllib.request.urlopen(f"{base}/bench/baseline/", timeout=2) as response:
                if response.status == 200:
                    return
        except OSError:
            time.sleep(0.2)
    raise RuntimeError("gunicorn did not start serving in time")


#: How many times longer than asked a run may go when its window held no whole response.
LONGEST_STRETCH = 8


def wrk(url: str, seconds: float, *, method: str = "GET", body_file: str = "", headers: dict | None = None,
        unique_header: str = "") -> Load:
    """Run wrk against `url` for `seconds`; a window in which no response completed measures nothing (a
    page slower than the window, as `--quick`'s 1 s windows on a loaded machine: seen in CI, "0 req/s"), so
    the run is repeated for twice as long, up to LONGEST_STRETCH times the time asked."""
    stretch = 1
    while True:
        measured = _wrk_once(url, seconds * stretch, method=method, body_file=body_file, headers=headers,
                             unique_header=unique_header)
        if measured.requests or stretch >= LONGEST_STRETCH:
            return measured
        stretch *= 2


def _wrk_once(url: str, seconds: float, *, method: str, body_file: str, headers: dict | None,
              unique_header: str) -> Load:
    """One run of wrk, and the JSON line our Lua script prints."""
    env = {
        **os.environ, "BENCH_METHOD": method, "BENCH_BODY_FILE": body_file, "BENCH_UNIQUE_HEADER": unique_header,
        "BENCH_HEADERS": "|".join(f"{name}: {value}" for name, value in (headers or {}).items()),
    }
    command = [require_wrk(), "-t1", f"-c{CONNECTIONS}", f"-d{max(1, round(seconds))}s", "--timeout", "10s",
               "-s", str(LUA_SCRIPT), url]
    output = subprocess.run(command, env=env, capture_output=True, text=True, check=True).stdout
    line = next(line for line in output.splitlines() if line.startswith("BENCH_JSON "))
    data = json.loads(line.removeprefix("BENCH_JSON "))
    errors = sum(value for key, value in data.items() if key.startswith("errors_"))
    return Load(requests=data["requests"], seconds=data["duration_us"] / 1e6, p50_ms=data["p50_us"] / 1000,
                p99_ms=data["p99_us"] / 1000, errors=errors)
