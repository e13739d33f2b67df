"""The admin at the full archive and at a tenth, loaded side by side (issue 26).

Why: the issue's bar is each admin page within 10% between the two scales. Taken from the scales'
own phases -- the tenth's, then a generation and many minutes later the full archive's -- the two
figures also differ by whatever this shared host did in between: the same archive's post list took
155 ms in one run and 182 ms in the next, minutes apart (docs/benchmarks.md), so that comparison
judged the host as much as the code.

How: once the tenth is measured, its database is copied (PostgreSQL: ``CREATE DATABASE … TEMPLATE``;
SQLite: the file), keeping its rows, primary keys and the signed-in sessions, and the full archive is
generated after it as before. Two gunicorns with the cold settings (the admin is never cached) serve
one archive each; round after round every admin target is loaded on one archive and at once on the
other, the order swapped from one target and round to the next so neither scale always goes first.
A pair is thus ~25 s apart, not the minutes a round of eleven targets takes: loading every target
on one archive and then every target on the other let the host's drift between the halves show up
as a change (an empty deliveries list came out 13% "faster" at full scale). A target's change is
the median, over the rounds, of that round's full-scale req/s over the tenth's, minus one: five
rounds, as the issue's own figures were medians of five. The copy is dropped after.
"""
import os
import shutil
import statistics
import time
from pathlib import Path
from urllib.parse import urlsplit

import dj_database_url
from django.db import connections

from . import load
from .database import admin_connection
from .targets import Target, phase_env

#: Pairs per target: their median sets two outliers aside (the issue timed its lists as medians of five).
MIN_ROUNDS = 5
COPY_SUFFIX = "_tenth"
#: The issue's bar: each admin target's throughput at the full archive within this of the tenth's.
TOLERANCE = 0.10


def snapshot() -> str:
    """Copy the bench database as it is now; the copy's DATABASE_URL."""
    url = os.environ["DATABASE_URL"]
    config = dj_database_url.parse(url)
    connections.close_all()  # PostgreSQL copies a template only when no one is connected to it
    if config["ENGINE"] != "django.db.backends.postgresql":
        source = Path(config["NAME"])
        copy = source.with_name(f"{source.stem}{COPY_SUFFIX}{source.suffix}")
        shutil.copyfile(source, copy)
        return f"sqlite:///{copy}"
    name, copy = config["NAME"], f"{config['NAME']}{COPY_SUFFIX}"
    with admin_connection(url) as admin:
        admin.execute(f'DROP DATABASE IF EXISTS "{copy}" WITH (FORCE)')
        admin.execute(f'CREATE DATABASE "{copy}" TEMPLATE "{name}"')
    return urlsplit(url)._replace(path=f"/{copy}").geturl()


def drop(url: str) -> None:
    config = dj_database_url.parse(url)
    if config["ENGINE"] != "django.db.backends.postgresql":
        Path(config["NAME"]).unlink(missing_ok=True)
        return
    with admin_connection(url) as admin:
        admin.execute(f'DROP DATABASE IF EXISTS "{config["NAME"]}" WITH (FORCE)')


def measure(full: list[Target], tenth: list[Target], tenth_url: str, rounds: int, seconds: float,
            load_target) -> dict:
    """Load each admin target on both archives, round after round (see the module's docstring);
    ``load_target(base_url, target)`` warms up and measures one target as the scales' phases do."""
    rounds = max(MIN_ROUNDS, rounds)
    tenth_by_name = {target.name: target for target in tenth}
    env = phase_env("cold")
    runs = {target.name: {"full": [], "tenth": []} for target in full}
    started = time.perf_counter()
    with load.gunicorn(env) as full_base, load.gunicorn({**env, "DATABASE_URL": tenth_url}) as tenth_base:
        servers = {"full": (full_base, {t.name: t for t in full}), "tenth": (tenth_base, tenth_by_name)}
        for number in range(rounds):
            for position, name in enumerate(runs):
                for scale in (("full", "tenth") if (number + position) % 2 == 0 else ("tenth", "full")):
                    base, targets = servers[scale]
                    result = load_target(base, targets[name])
                    if result.errors:
                        raise RuntimeError(f"{name} ({scale}): {result.errors} failed requests under load")
                    runs[name][scale].append(result)
    return {"rounds": rounds, "seconds": seconds, "elapsed_s": round(time.perf_counter() - started, 1),
            "targets": [summarise(name, pair) for name, pair in runs.items()]}


def summarise(name: str, pair: dict[str, list[load.Load]]) -> dict:
    changes = [full.rps / tenth.rps - 1 for full, tenth in zip(pair["full"], pair["tenth"]) if tenth.rps]
    return {
        "name": name,
        "full_rps": round(statistics.median(run.rps for run in pair["full"]), 1),
        "tenth_rps": round(statistics.median(run.rps for run in pair["tenth"]), 1),
        "full_p50_ms": round(statistics.median(run.p50_ms for run in pair["full"]), 2),
        "tenth_p50_ms": round(statistics.median(run.p50_ms for run in pair["tenth"]), 2),
        "round_changes": [round(change, 3) for change in changes],
        "change": round(statistics.median(changes), 3) if changes else None,
    }


def checks(phase: dict | None) -> list[dict]:
    """Each target's change, judged against the issue's bar (named as the scales' own check was)."""
    if not phase:
        return []
    return [{"check": f"{target['name']} (none) throughput tenth -> full scale", "value": target["change"],
             "bar": f"within ±{TOLERANCE}", "ok": target["change"] is not None and abs(target["change"]) <= TOLERANCE}
            for target in phase["targets"]]


def text(phase: dict | None) -> str:
    """The phase as a Markdown table for docs/benchmarks.md."""
    if not phase:
        return "not run (no tenth scale)."
    lines = [f"{phase['rounds']} rounds × {phase['seconds']} s per target and archive, each target loaded on both "
             f"back to back, the order swapped from one to the next ({phase['elapsed_s']} s).", "",
             "| target | full archive req/s (p50 ms) | tenth req/s (p50 ms) | change, median of rounds | rounds |",
             "|---|---:|---:|---:|---|"]
    lines += [f"| {t['name']} | {t['full_rps']} ({t['full_p50_ms']}) | {t['tenth_rps']} ({t['tenth_p50_ms']}) | "
              f"{'' if t['change'] is None else format(t['change'], '+.1%')} | "
              f"{', '.join(format(c, '+.1%') for c in t['round_changes'])} |" for t in phase["targets"]]
    return "\n".join(lines)
