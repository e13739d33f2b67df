"""Back up and restore a site (`make backup`, `make restore [FROM=…]`; docs/deployment.md "Backups").

A backup is one folder in BACKUP_DIR (default var/backups/), named by its UTC time, holding:
- ``database.dump``: the database named by DATABASE_URL (default: the topology's), ``pg_dump``'s
  custom format (``database.sqlite3`` for a SQLite URL, copied with SQLite's online backup);
- ``files.tar.gz``: the image renditions (DJANGO_MEDIA_ROOT) and originals (IMAGES_ORIGINALS_ROOT),
  unless they live in a bucket (MEDIA_S3_BUCKET: back the bucket up with its provider's tools);
- ``secret_key``: the topology's generated Django secret key, when it has one (TOPOLOGY_DIR); a key
  given as DJANGO_SECRET_KEY is the operator's to keep;
- ``manifest.json``, written last: a folder without one is an interrupted backup and is never restored.

``restore`` takes the newest complete backup there (or ``--from``), creates the database if it is
missing and restores into it -- refusing a database that already has tables unless ``--force``
(then it replaces them) -- then the files and the secret key. Standard library, plus psycopg to
create the database: it must run where the site is broken.
"""
import argparse
import datetime
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tarfile
from pathlib import Path
from urllib.parse import unquote, urlsplit, urlunsplit

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from deploy.topology import DEFAULTS, PROJECT_DIR  # noqa: E402 -- after the project is importable
from repojournal.settings.images import IMAGES_ORIGINALS_ROOT, MEDIA_ROOT  # noqa: E402

MANIFEST = "manifest.json"
FILE_ROOTS = {"renditions": MEDIA_ROOT, "originals": IMAGES_ORIGINALS_ROOT}


class BackupError(Exception):
    """A backup or restore that cannot go on; its message says why and what to do."""


def database_url() -> str:
    return os.environ.get("DATABASE_URL") or DEFAULTS["DATABASE_URL"]


def backup_dir() -> Path:
    return Path(os.environ.get("BACKUP_DIR") or PROJECT_DIR / "var" / "backups")


def secret_key_file() -> Path:
    return Path(os.environ.get("TOPOLOGY_DIR") or DEFAULTS["TOPOLOGY_DIR"]) / "secret_key"


def is_sqlite(url: str) -> bool:
    return url.startswith("sqlite:")


def sqlite_path(url: str) -> Path:
    import dj_database_url

    return Path(dj_database_url.parse(url)["NAME"])


def redacted(url: str) -> str:
    """The URL without its password, for the manifest and messages."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    netloc = f"{parts.username + '@' if parts.username else ''}{host}{':' + str(parts.port) if parts.port else ''}"
    return urlunsplit(parts._replace(netloc=netloc))


# Backing up ---------------------------------------------------------------------------------------

def backup(directory: Path | None = None) -> Path:
    """Write a complete backup folder and return it; nothing is left named as a backup if it fails."""
    url, directory = database_url(), directory or backup_dir()
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%dT%H%M%S.%fZ")
    partial = directory / f".partial-{stamp}"
    directory.mkdir(parents=True, exist_ok=True)
    partial.mkdir(mode=0o700)  # hashed tokens, endpoint secrets, maybe the secret key: the operator's only
    try:
        database = _dump_database(url, partial)
        files = _archive_files(partial)
        secret = _copy_secret_key(partial)
        manifest = {"created_at": stamp, "database": redacted(url), "database_file": database,
                    "files": files, "secret_key": secret}
        (partial / MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n")
        final = directory / stamp
        partial.rename(final)
        return final
    except BaseException:
        shutil.rmtree(partial, ignore_errors=True)
        raise


def sqlite_copy(source_path: Path, target_path: Path) -> None:
    """SQLite's online backup (consistent while the site writes); both connections closed after."""
    source, target = sqlite3.connect(source_path), sqlite3.connect(target_path)
    try:
        source.backup(target)
    finally:
        source.close()
        target.close()


def _dump_database(url: str, into: Path) -> str:
    if is_sqlite(url):
        target = into / "database.sqlite3"
        sqlite_copy(sqlite_path(url), target)
        return target.name
    target = into / "database.dump"
    _run(["pg_dump", "--format=custom", "--no-owner", "--no-privileges", f"--file={target}", f"--dbname={url}"])
    return target.name


def _archive_files(into: Path) -> str | None:
    if os.environ.get("MEDIA_S3_BUCKET"):
        return None
    with tarfile.open(into / "files.tar.gz", "w:gz") as archive:
        for name, root in FILE_ROOTS.items():
            if Path(root).is_dir():
                archive.add(root, arcname=name)
    return "files.tar.gz"


def _copy_secret_key(into: Path) -> str | None:
    source = secret_key_file()
    if os.environ.get("DJANGO_SECRET_KEY") or not source.exists():
        return None
    shutil.copy2(source, into / "secret_key")
    (into / "secret_key").chmod(0o600)
    return "secret_key"


# Restoring ----------------------------------------------------------------------------------------

def newest(directory: Path | None = None) -> Path:
    """The newest complete backup in `directory` (one with a manifest)."""
    directory = directory or backup_dir()
    complete = sorted(path for path in directory.glob("*") if (path / MANIFEST).is_file()) if directory.is_dir() else []
    if not complete:
        raise BackupError(f"No complete backup in {directory} (set BACKUP_DIR, or FROM=<folder>).")
    return complete[-1]


def restore(source: Path, *, force: bool = False) -> dict:
    """Restore the backup in `source` into DATABASE_URL's database and the file roots; returns its manifest."""
    if not (source / MANIFEST).is_file():
        raise BackupError(f"{source} is not a complete backup (it has no {MANIFEST}).")
    manifest = json.loads((source / MANIFEST).read_text())
    url = database_url()
    if is_sqlite(url):
        _restore_sqlite(source / manifest["database_file"], sqlite_path(url), force)
    else:
        _restore_postgresql(source / manifest["database_file"], url, force)
    if manifest.get("files"):
        _restore_files(source / manifest["files"], force)
    if manifest.get("secret_key"):
        _restore_secret_key(source / manifest["secret_key"], force)
    return manifest


def _restore_sqlite(dump: Path, target: Path, force: bool) -> None:
    if target.exists() and target.stat().st_size and not force:
        raise BackupError(f"{target} already exists; restore over it with FORCE=1 (make) or --force.")
    sqlite_copy(dump, target)


def _restore_postgresql(dump: Path, url: str, force: bool) -> None:
    import psycopg
    from psycopg import sql

    parts = urlsplit(url)
    name = unquote(parts.path.lstrip("/"))
    maintenance = urlunsplit(parts._replace(path="/postgres"))
    with psycopg.connect(maintenance, autocommit=True) as connection:
        exists = connection.execute("SELECT 1 FROM pg_database WHERE datname = %s", [name]).fetchone()
        if not exists:
            connection.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    with psycopg.connect(url) as connection:
        tables = connection.execute(
            "SELECT count(*) FROM pg_tables WHERE schemaname NOT IN ('pg_catalog', 'information_schema')"
        ).fetchone()[0]
    if tables and not force:
        raise BackupError(f"{redacted(url)} already has {tables} tables; restore over them with FORCE=1 (make) "
                          "or --force, or name an empty database in DATABASE_URL.")
    command = ["pg_restore", "--no-owner", "--no-privileges", "--exit-on-error", "--single-transaction"]
    _run([*command, *(["--clean", "--if-exists"] if tables else []), f"--dbname={url}", str(dump)])


def _restore_files(archive: Path, force: bool) -> None:
    for root in FILE_ROOTS.values():
        if Path(root).is_dir() and any(Path(root).iterdir()) and not force:
            raise BackupError(f"{root} is not empty; restore over it with FORCE=1 (make) or --force.")
    with tarfile.open(archive) as files:
        for name, root in FILE_ROOTS.items():
            members = [member for member in files.getmembers() if member.name.split("/")[0] == name]
            if not members:
                continue
            if force:
                shutil.rmtree(root, ignore_errors=True)
            Path(root).parent.mkdir(parents=True, exist_ok=True)
            for member in members:
                member.name = member.name.removeprefix(name).lstrip("/")
            files.extractall(root, members=[member for member in members if member.name], filter="data")


def _restore_secret_key(copy: Path, force: bool) -> None:
    target = secret_key_file()
    if target.exists() and target.read_text() != copy.read_text() and not force:
        raise BackupError(f"{target} holds another secret key; sessions and signed links need the backup's: "
                          "restore over it with FORCE=1 (make) or --force.")
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy2(copy, target)
    target.chmod(0o600)


def _run(command: list[str]) -> None:
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode:
        raise BackupError(f"{command[0]} failed ({result.returncode}): {result.stderr.strip()}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("backup", help="write a backup into BACKUP_DIR")
    restoring = commands.add_parser("restore", help="restore the newest backup in BACKUP_DIR, or --from")
    restoring.add_argument("--from", dest="source", type=Path, help="a backup folder")
    restoring.add_argument("--force", action="store_true", help="replace a database and files that exist")
    arguments = parser.parse_args(argv)
    try:
        if arguments.command == "backup":
            print(f"Backed up {redacted(database_url())} into {backup(None)}")
        else:
            source = arguments.source or newest()
            restore(source, force=arguments.force)
            print(f"Restored {source} into {redacted(database_url())}")
    except BackupError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
