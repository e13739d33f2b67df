"""The benchmark database: created when missing, and only ever one whose name says it is for benchmarks."""
import re
from urllib.parse import urlsplit

import dj_database_url


def ensure_bench_database(url: str) -> None:
    """Create the PostgreSQL database if it does not exist; refuse any database not named *bench*.

    The generator empties the content tables, so pointing DATABASE_URL at a
    real site by mistake must fail before anything is written.
    """
    config = dj_database_url.parse(url)
    name = str(config["NAME"])
    if "bench" not in name.rsplit("/", 1)[-1]:
        raise SystemExit(f"Refusing to benchmark database {name!r}: its name must contain 'bench' (it is emptied).")
    if config["ENGINE"] != "django.db.backends.postgresql":
        return
    if not re.fullmatch(r"[A-Za-z0-9_]+", name):
        raise SystemExit(f"Benchmark database names are letters, digits and underscores, not {name!r}.")
    import psycopg

    parts = urlsplit(url)
    admin_url = parts._replace(path="/postgres").geturl()
    with psycopg.connect(admin_url, autocommit=True) as connection:
        exists = connection.execute("SELECT 1 FROM pg_database WHERE datname = %s", [name]).fetchone()
        if not exists:
            connection.execute(f'CREATE DATABASE "{name}"')
