"""Start, stop and inspect the production topology on one machine (`make up|down|status|manage`).

Varnish in front of two gunicorn instances, two Celery workers and one beat, all under
supervisord (deploy/supervisord.conf). Everything that differs between machines or between
topologies on one machine (tests/edge starts its own on free ports) comes from the
environment; the defaults are `make up`'s. Runtime files (rendered VCL, the generated secret
key, logs, sockets) live in TOPOLOGY_DIR, by default var/topology/ (untracked).

Standard library only: it runs before anything else is known to work.
"""
import argparse
import os
import re
import secrets
import shutil
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

PROJECT_DIR = Path(__file__).resolve().parent.parent
DEPLOY_DIR = PROJECT_DIR / "deploy"
VCL_TEMPLATE = DEPLOY_DIR / "varnish" / "default.vcl"
SUPERVISOR_CONF = DEPLOY_DIR / "supervisord.conf"

DEFAULTS = {
    "TOPOLOGY_DIR": str(PROJECT_DIR / "var" / "topology"),
    "EDGE_LISTEN": "127.0.0.1:8080",
    "APP_PORT_1": "8001",
    "APP_PORT_2": "8002",
    "EDGE_PURGERS": "127.0.0.1,::1",
    "GUNICORN_WORKERS": "2",
    "CELERY_CONCURRENCY": "1",
    "VARNISH_MEMORY": "256m",
    "DATABASE_URL": "postgres://postgres@127.0.0.1:5432/repojournal",
    "REDIS_URL": "redis://127.0.0.1:6379/1",
    # `make up REPLICAS=1`: streaming replicas of DATABASE_URL's PostgreSQL (deploy/replica.py) on
    # REPLICA_PORT and up; the apps read from them (DATABASE_REPLICA_URLS, docs/deployment.md).
    "REPLICAS": "0",
    "REPLICA_PORT": "5433",
    # A local SMTP catcher (aiosmtpd) that keeps every email the topology sends in TOPOLOGY_DIR/mail
    # (a Maildir: `make mail` lists it), used unless EMAIL_HOST names a real server (docs/newsletters.md).
    "MAIL_CATCHER_PORT": "1025",
}


def setting(name: str) -> str:
    return os.environ.get(name) or DEFAULTS[name]


def run_dir() -> Path:
    return Path(setting("TOPOLOGY_DIR"))


def secret_key(directory: Path) -> str:
    """The Django secret key: DJANGO_SECRET_KEY, or one generated once and kept in the run dir (0600)."""
    if os.environ.get("DJANGO_SECRET_KEY"):
        return os.environ["DJANGO_SECRET_KEY"]
    path = directory / "secret_key"
    if not path.exists():
        directory.mkdir(parents=True, exist_ok=True)
        path.write_text(secrets.token_urlsafe(50))
        path.chmod(0o600)
    return path.read_text().strip()


def replicas() -> list[tuple[int, Path]]:
    """Each replica's port and data directory (as root under /var/lib/postgresql, which postgres reaches)."""
    found = []
    for number in range(int(setting("REPLICAS") or 0)):
        port = int(setting("REPLICA_PORT")) + number
        base = Path("/var/lib/postgresql") if os.geteuid() == 0 else run_dir()
        found.append((port, Path(os.environ.get("REPLICA_DATA_DIR") or base / "repojournal-replicas") / str(port)))
    return found


def replica_urls() -> str:
    primary = urlsplit(setting("DATABASE_URL"))
    return ",".join(urlunsplit(primary._replace(netloc=f"{primary.username or 'postgres'}@127.0.0.1:{port}"))
                    for port, _ in replicas())


def replica(command: str, data: Path, *args: str) -> None:
    subprocess.run([sys.executable, str(DEPLOY_DIR / "replica.py"), command, "--data", str(data), *args], check=True)


def render_vcl(template: str, app_ports: tuple[str, str], purgers: list[str]) -> str:
    """The VCL with this topology's backend ports and purge ACL; nothing else changes."""
    vcl = template.replace('.port = "8001";', f'.port = "{app_ports[0]}";')
    vcl = vcl.replace('.port = "8002";', f'.port = "{app_ports[1]}";')
    entries = "".join(f'    "{address.strip()}";\n' for address in purgers if address.strip())
    return re.sub(r"acl purgers \{\n.*?\}", "acl purgers {\n" + entries + "}", vcl, flags=re.S)


def environment() -> dict[str, str]:
    """The environment supervisord and every program under it run with."""
    directory = run_dir()
    edge = setting("EDGE_LISTEN")
    env = {
        **os.environ,
        **{name: setting(name) for name in DEFAULTS},
        "PROJECT_DIR": str(PROJECT_DIR),
        "VENV_BIN": str(Path(sys.executable).parent),
        "VARNISHD": shutil.which("varnishd") or "/usr/sbin/varnishd",
        # As root, varnishd drops to its own user ("unix"); that user must then read TOPOLOGY_DIR.
        "VARNISH_JAIL": os.environ.get("VARNISH_JAIL") or ("unix" if os.geteuid() == 0 else "none"),
        "DJANGO_SETTINGS_MODULE": "repojournal.settings.prod",
        "DJANGO_SECRET_KEY": secret_key(directory),
        "DJANGO_DEBUG": "0",
        # Plain HTTP on this machine; behind TLS (the CDN or a terminating proxy) leave this on.
        "DJANGO_SECURE_COOKIES": os.environ.get("DJANGO_SECURE_COOKIES", "0"),
        "DJANGO_ALLOWED_HOSTS": os.environ.get("DJANGO_ALLOWED_HOSTS", "localhost,127.0.0.1,[::1]"),
        "SITE_URL": os.environ.get("SITE_URL", f"http://{edge}"),
        "EDGE_PURGE_BACKEND": os.environ.get("EDGE_PURGE_BACKEND", "varnish"),
        # Sign-in lockouts count the reader's address, which the edge puts in X-Real-IP (the VCL).
        "AXES_IPWARE_META_PRECEDENCE_ORDER": os.environ.get("AXES_IPWARE_META_PRECEDENCE_ORDER",
                                                            "HTTP_X_REAL_IP,REMOTE_ADDR"),
        "EDGE_VARNISH_URLS": os.environ.get("EDGE_VARNISH_URLS", f"http://{edge}"),
        "DATABASE_CONN_MAX_AGE": os.environ.get("DATABASE_CONN_MAX_AGE", "60"),
        # Behind the edge, an instance must not trust its own copy of the page-cache version for a
        # second: the edge refetches right after a purge, and a stale page from the other instance
        # would then be kept for s-maxage. Misses are rare here, so asking Redis each time is cheap.
        "PAGE_CACHE_LOCAL_SECONDS": os.environ.get("PAGE_CACHE_LOCAL_SECONDS", "0"),
    }
    if not os.environ.get("EMAIL_HOST"):
        env.update(EMAIL_HOST="127.0.0.1", EMAIL_PORT=env["MAIL_CATCHER_PORT"])
    if replicas():
        env["DATABASE_REPLICA_URLS"] = replica_urls()
    return env


def render() -> dict[str, str]:
    """Write the run dir (VCL, secret key, log folder); return the programs' environment."""
    directory = run_dir()
    (directory / "logs").mkdir(parents=True, exist_ok=True)
    env = environment()
    vcl = render_vcl(VCL_TEMPLATE.read_text(), (env["APP_PORT_1"], env["APP_PORT_2"]), env["EDGE_PURGERS"].split(","))
    (directory / "default.vcl").write_text(vcl)
    return env


def manage(env: dict[str, str], *args: str) -> None:
    subprocess.run([sys.executable, str(PROJECT_DIR / "manage.py"), *args], env=env, check=True, cwd=PROJECT_DIR)


def supervisorctl(env: dict[str, str], *args: str, quiet: bool = False) -> int:
    command = [str(Path(sys.executable).parent / "supervisorctl"), "-c", str(SUPERVISOR_CONF), *args]
    output = subprocess.DEVNULL if quiet else None
    return subprocess.run(command, env=env, cwd=PROJECT_DIR, stdout=output, stderr=output).returncode


def running(env: dict[str, str]) -> bool:
    return supervisorctl(env, "pid", quiet=True) == 0


def get(url: str, timeout: float = 3.0) -> tuple[int, dict[str, str]]:
    """Status and headers of a GET (errors included), or (0, {}) when nothing answers."""
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:
            return response.status, dict(response.headers)
    except urllib.error.HTTPError as error:
        return error.code, dict(error.headers)
    except (urllib.error.URLError, OSError):
        return 0, {}


def health_report(url: str) -> list[str]:
    """/health/'s text lines (one per dependency, replicas with their lag), or why there are none."""
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            body = response.read()
    except urllib.error.HTTPError as error:
        body = error.read()
    except (urllib.error.URLError, OSError) as error:
        return [f"{url}: {error}"]
    return body.decode(errors="replace").splitlines()


def wait_healthy(env: dict[str, str], timeout: float = 90.0) -> bool:
    """True once both app instances and the edge answer /health/ with 200."""
    urls = [f"http://127.0.0.1:{env[f'APP_PORT_{n}']}/health/?format=text" for n in (1, 2)]
    urls.append(f"http://{env['EDGE_LISTEN']}/health/?format=text")
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if all(get(url)[0] == 200 for url in urls):
            return True
        time.sleep(0.5)
    return False


def up(prepare: bool = True, migrate: bool = True) -> int:
    """Start everything (migrating and collecting static files first unless told not to); 0 once healthy.

    Production settings link only fingerprinted static files, listed in the manifest collectstatic
    writes: without it every page fails. Hence `--no-migrate` for a database someone else migrated
    (tests/edge, the bench), which still collects.
    """
    env = render()
    if prepare and migrate:
        manage(env, "migrate", "--noinput")
    if prepare:
        manage(env, "collectstatic", "--noinput", "--verbosity", "0")
    for port, data in replicas():  # after migrate: the replica starts with the primary's tables
        replica("start", data, "--primary", env["DATABASE_URL"], "--port", str(port))
    (run_dir() / "replicas").write_text("".join(f"{data}\n" for _port, data in replicas()))
    if not running(env):
        subprocess.run(
            [str(Path(sys.executable).parent / "supervisord"), "-c", str(SUPERVISOR_CONF)],
            env=env, cwd=PROJECT_DIR, check=True,
        )
    if not wait_healthy(env):
        supervisorctl(env, "status")
        print(f"The topology did not become healthy: see {run_dir() / 'logs'}", file=sys.stderr)
        return 1
    print(f"Up: the site is at http://{env['EDGE_LISTEN']}/ (Varnish), apps on {env['APP_PORT_1']} and {env['APP_PORT_2']}.")
    for port, data in replicas():
        print(f"A streaming replica on port {port} ({data}) serves readers' reads.")
    return 0


def down() -> int:
    env = environment()
    code = stop_programs(env)
    for _port, data in replicas() or recorded_replicas():
        replica("stop", data)
    return code


def recorded_replicas() -> list[tuple[int, Path]]:
    """`make down` without REPLICAS=1 still stops the replicas `make up REPLICAS=1` started."""
    path = run_dir() / "replicas"
    lines = path.read_text().split() if path.exists() else []
    return [(0, Path(line)) for line in lines]


def stop_programs(env: dict[str, str]) -> int:
    if not running(env):
        print("Not running.")
        return 0
    pidfile = run_dir() / "supervisord.pid"
    pid = int(pidfile.read_text()) if pidfile.exists() else None
    code = supervisorctl(env, "shutdown")
    # shutdown returns once asked: wait until every program (and their database connections) is gone.
    deadline = time.monotonic() + 60
    while pid and time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            break
        time.sleep(0.2)
    return code


def status() -> int:
    env = environment()
    code = supervisorctl(env, "status")
    edge = f"http://{env['EDGE_LISTEN']}"
    health, _ = get(f"{edge}/health/?format=text")
    for line in health_report(f"http://127.0.0.1:{env['APP_PORT_1']}/health/?format=text"):
        print(f"  {line}")
    get(f"{edge}/")
    home, headers = get(f"{edge}/")
    print(f"edge {edge}: /health/ {health or 'unreachable'}; / {home or 'unreachable'} X-Cache: {headers.get('X-Cache', '-')}")
    return code or (0 if health == 200 else 1)


def manage_command(arguments: list[str]) -> int:
    """`make manage ARGS="..."`: a management command with the environment the topology's programs have
    (production settings, the run dir's secret key, the topology's database, Redis and edge)."""
    return subprocess.run([sys.executable, str(PROJECT_DIR / "manage.py"), *arguments], env=environment(),
                          cwd=PROJECT_DIR).returncode


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["manage"]:  # everything after it is the management command's own
        return manage_command(argv[1:])
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                     epilog="manage ARGS...: a management command with the topology's environment")
    parser.add_argument("command", choices=["up", "down", "status", "render"])
    parser.add_argument("--no-prepare", action="store_true", help="skip migrate and collectstatic")
    parser.add_argument("--no-migrate", action="store_true", help="skip migrate; collectstatic still runs")
    args = parser.parse_args(argv)
    if args.command == "up":
        return up(prepare=not args.no_prepare, migrate=not args.no_migrate)
    if args.command == "down":
        return down()
    if args.command == "render":
        render()
        return 0
    return status()


if __name__ == "__main__":
    sys.exit(main())
