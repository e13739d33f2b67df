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
    with admin_connection(url) as connection:
        exists = connection.execute("SELECT 1 FROM pg_database WHERE datname = %s", [name]).fetchone()
        if not exists:
            connection.execute(f'CREATE DATABASE "{name}"')


def admin_connection(url: str):
    """An autocommit connection to the server's ``postgres`` database: databases are created and dropped from there."""
    import psycopg

    return psycopg.connect(urlsplit(url)._replace(path="/postgres").geturl(), autocommit=True)


def ensure_own_broker() -> None:
    """Refuse a Redis database whose queue other Celery workers already consume.

    The bench starts its own workers and times what they do. A worker already on the queue (a
    ``make up`` topology, the test suite's edge topology, a bench killed before it cleaned up) takes
    some of the bench's tasks and looks for their rows in its own database: the bench then waits for
    work that was done elsewhere, or never is (seen in CI: an ingestion phase that ran into its
    timeout and a newsletter send that reached no one). Control broadcasts are scoped to the Redis
    database, so a ping reaches exactly the workers that share the bench's queue.
    """
    from django.conf import settings

    if not settings.REDIS_URL:
        return  # tasks run inline: there is no queue to share
    from repojournal.celery import app

    workers = sorted(name for reply in app.control.ping(timeout=1.0) or [] for name in reply)
    if workers:
        raise SystemExit(f"Refusing to benchmark on {settings.REDIS_URL}: Celery workers already consume its queue "
                         f"({', '.join(workers)}). Give the bench a Redis database of its own (REDIS_URL=redis://…/<n>).")
