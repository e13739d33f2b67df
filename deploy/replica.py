"""A streaming read replica of a PostgreSQL on this machine (`make up REPLICAS=1`, the replica tests).

    python deploy/replica.py start --primary postgres://postgres@127.0.0.1:5432/repojournal \\
        --data /var/lib/postgresql/repojournal-replica-5433 --port 5433
    python deploy/replica.py stop --data /var/lib/postgresql/repojournal-replica-5433

``start`` makes the replica the first time (``pg_basebackup -R``: a copy of the primary's
cluster that follows it by streaming replication) and starts it on its own port; later it
only starts it again, and it catches up from where it stopped. ``stop`` is a fast shutdown.

As root the cluster runs as the ``postgres`` user (PostgreSQL refuses root), so its data
directory must be reachable by that user. A primary whose pg_hba.conf has no ``replication``
line for 127.0.0.1 (Debian's default has one; some images drop it) gets one, trust like the
local lines, when this machine can write that file; anywhere else an operator adds it.

Standard library only, as deploy/topology.py.
"""
import argparse
import os
import pwd
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import urlsplit

#: Settings a hot standby must hold at least as high as its primary (PostgreSQL refuses to start otherwise).
AT_LEAST_PRIMARY = ("max_connections", "max_worker_processes", "max_wal_senders", "max_prepared_transactions",
                    "max_locks_per_transaction")
REPLICATION_LINE = "host replication all 127.0.0.1/32 trust\n"


def postgres_bin() -> Path:
    """The server's programs: Debian keeps them under /usr/lib/postgresql/<version>/bin, off PATH."""
    candidates = sorted(Path("/usr/lib/postgresql").glob("*/bin/pg_ctl"), key=lambda p: int(p.parts[-3]), reverse=True)
    if candidates:
        return candidates[0].parent
    found = shutil.which("pg_ctl")
    if not found:
        raise SystemExit("PostgreSQL's server programs (pg_ctl, pg_basebackup) are not installed")
    return Path(found).parent


def run_as_owner(*command: str, check: bool = True) -> subprocess.CompletedProcess:
    if os.geteuid() == 0:
        command = ("runuser", "-u", "postgres", "--", *command)
    return subprocess.run(command, check=check, capture_output=True, text=True, timeout=600)


def psql(primary: str, sql: str) -> str:
    parts = urlsplit(primary)
    command = ["psql", "-X", "-At", "-h", parts.hostname or "127.0.0.1", "-p", str(parts.port or 5432),
               "-U", parts.username or "postgres", "-d", "postgres", "-c", sql]
    return subprocess.run(command, check=True, capture_output=True, text=True, timeout=60).stdout.strip()


def allow_replication(primary: str) -> None:
    """Add a replication line to a local primary's pg_hba.conf if it has none (and we may write it)."""
    rules = psql(primary, "SELECT count(*) FROM pg_hba_file_rules WHERE 'replication' = ANY(database)")
    if rules != "0":
        return
    hba = Path(psql(primary, "SHOW hba_file"))
    if not os.access(hba, os.W_OK):
        raise SystemExit(f"{hba} allows no replication connections: add “{REPLICATION_LINE.strip()}” and reload")
    with hba.open("a") as file:
        file.write("# Added by RepoJournal's deploy/replica.py: streaming replicas on this machine.\n")
        file.write(REPLICATION_LINE)
    psql(primary, "SELECT pg_reload_conf()")
    print(f"Added “{REPLICATION_LINE.strip()}” to {hba} and reloaded the primary.")


def make(primary: str, data: Path) -> None:
    """The first start: copy the primary's cluster, set up to follow it."""
    allow_replication(primary)
    data.mkdir(parents=True, exist_ok=True)
    if os.geteuid() == 0:
        owner = pwd.getpwnam("postgres")
        os.chown(data, owner.pw_uid, owner.pw_gid)
    data.chmod(0o700)
    parts = urlsplit(primary)
    run_as_owner(str(postgres_bin() / "pg_basebackup"), "-h", parts.hostname or "127.0.0.1",
                 "-p", str(parts.port or 5432), "-U", parts.username or "postgres", "-D", str(data),
                 "--write-recovery-conf", "--wal-method=stream", "--checkpoint=fast", "--no-sync")
    # Debian keeps a cluster's configuration outside its data directory: the copy has none.
    for name, text in (("postgresql.conf", ""), ("pg_hba.conf", "local all all trust\nhost all all 127.0.0.1/32 trust\n"),
                       ("pg_ident.conf", "")):
        path = data / name
        if not path.exists():
            path.write_text(text)
            if os.geteuid() == 0:
                os.chown(path, pwd.getpwnam("postgres").pw_uid, pwd.getpwnam("postgres").pw_gid)


def start(primary: str, data: Path, port: int) -> None:
    if not (data / "PG_VERSION").exists():
        make(primary, data)
    options = [f"-p {port}", "-c listen_addresses=127.0.0.1", f"-k {tempfile.gettempdir()}", "-c hot_standby=on",
               "-c hot_standby_feedback=on"]
    for name in AT_LEAST_PRIMARY:
        options.append(f"-c {name}={psql(primary, f'SHOW {name}')}")
    log = data.parent / f"{data.name}.log"
    log.touch()
    if os.geteuid() == 0:
        os.chown(log, pwd.getpwnam("postgres").pw_uid, -1)
    result = run_as_owner(str(postgres_bin() / "pg_ctl"), "-D", str(data), "-l", str(log), "-o", " ".join(options),
                          "-w", "-t", "120", "start", check=False)
    if result.returncode != 0 and "another server might be running" not in result.stderr:
        raise SystemExit(f"the replica did not start:\n{result.stdout}{result.stderr}\n{log.read_text()[-2000:]}")
    wait_until_streaming(port)


def wait_until_streaming(port: int, timeout: float = 60.0) -> None:
    """Return once the replica answers in recovery (it follows the primary)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        answer = subprocess.run(["psql", "-X", "-At", "-h", "127.0.0.1", "-p", str(port), "-U", "postgres", "-d",
                                 "postgres", "-c", "SELECT pg_is_in_recovery()"], capture_output=True, text=True)
        if answer.stdout.strip() == "t":
            return
        time.sleep(0.3)
    raise SystemExit(f"the replica on port {port} does not answer as a standby after {timeout:g} s")


def stop(data: Path) -> None:
    if (data / "postmaster.pid").exists():
        run_as_owner(str(postgres_bin() / "pg_ctl"), "-D", str(data), "-m", "fast", "-w", "stop", check=False)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("command", choices=["start", "stop"])
    parser.add_argument("--data", type=Path, required=True, help="the replica's data directory")
    parser.add_argument("--primary", help="the primary's URL (start)")
    parser.add_argument("--port", type=int, help="the replica's port (start)")
    args = parser.parse_args(argv)
    if args.command == "start":
        if not args.primary or not args.port:
            parser.error("start needs --primary and --port")
        start(args.primary, args.data, args.port)
    else:
        stop(args.data)
    return 0


if __name__ == "__main__":
    sys.exit(main())
