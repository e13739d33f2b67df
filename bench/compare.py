"""``python -m bench.compare OTHER_CHECKOUT``: this checkout's code and another's, side by side.

Whether a change earns its keep is a question about two versions of the code on
one machine at one time: ratios drift between hosts and runs (docs/benchmarks.md),
a difference measured in alternation does not. Both checkouts serve the same
generated archive (generated once, by this checkout), with the same settings;
each round loads every chosen target on this checkout's gunicorn, then on the
other's, so a noisy neighbour hits both. The figures are medians over the rounds,
as ratios to the minimal view served by the same checkout in the same round.

Example: the API lists with ``api/compiled.py`` switched off in a worktree beside this one::

    git worktree add ../without HEAD && $EDITOR ../without/api/compiled.py
    DATABASE_URL=postgres://postgres@127.0.0.1:5432/bench REDIS_URL=redis://127.0.0.1:6379/7 \
        .venv/bin/python -m bench.compare ../without --only api --phases cold
"""
import argparse
import json
import os
import statistics
import sys
import tempfile
from pathlib import Path

import httpx

from .load import PROJECT_DIR


def parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.compare", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("other", type=Path, help="The other checkout (e.g. a git worktree of another commit).")
    parser.add_argument("--only", default="", help="Comma-separated parts of target names to load (default: all).")
    parser.add_argument("--phases", default="cold", help="Comma-separated: cold, warm, warm-redis.")
    parser.add_argument("--scale", type=float, default=0.05, help="Fraction of the full archive (50,000 posts).")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=4)
    parser.add_argument("--warmup", type=float, default=1)
    parser.add_argument("--output", type=Path, help="Where to write the comparison as JSON.")
    return parser.parse_args(argv)


def chosen(targets: list, only: str) -> list:
    """The baseline (every ratio needs it) and the targets whose names contain one of `only`'s parts."""
    parts = [part.strip().lower() for part in only.split(",") if part.strip()]
    return [t for t in targets if t.kind == "baseline" or not parts or any(p in t.name.lower() for p in parts)]


def compare(args: argparse.Namespace) -> dict:
    from django.core.cache import cache

    from .generate import Generator, Scale
    from .load import gunicorn
    from .run import log, measured_in, run_wrk, warm_up
    from .targets import build_targets, check, path_on, phase_settings

    trees = {"this": PROJECT_DIR, "other": args.other.resolve()}
    Generator(Scale().times(args.scale)).run()
    targets = chosen(build_targets(), args.only)
    for target in targets:
        check(target)
    results: dict = {}
    with tempfile.NamedTemporaryFile(suffix=".json") as body:
        body.write(next((t.body for t in build_targets() if t.kind == "webhook"), b"{}"))
        body.flush()
        for state in [phase.strip() for phase in args.phases.split(",")]:
            measured = [t for t in targets if measured_in(t, state)]
            env = {k: str(int(v) if isinstance(v, bool) else v) for k, v in phase_settings(state).items()}
            rps = {(tree, t.name): [] for tree in trees for t in measured}
            for number in range(1, args.rounds + 1):
                for tree, directory in trees.items():
                    cache.clear()
                    log(f"{state}: round {number}/{args.rounds}, {tree} ({directory})")
                    with gunicorn(env, project_dir=directory) as base:
                        for target in measured:
                            path = path_on(target, lambda url: httpx.get(base + url, timeout=30).text)
                            warm_up(base + path, target, args.warmup, body.name)
                            load = run_wrk(base + path, target, args.seconds, body.name)
                            if load.errors:
                                raise RuntimeError(f"{tree} {target.name}: {load.errors} failed requests")
                            rps[(tree, target.name)].append(load.rps)
            results[state] = summary(trees, measured, rps)
    return {"trees": {k: str(v) for k, v in trees.items()}, "scale": args.scale, "rounds": args.rounds,
            "seconds": args.seconds, "phases": results}


def summary(trees: dict, targets: list, rps: dict) -> list[dict]:
    """Per target: each tree's median ratio to its own baseline, and how much better this tree is."""
    rows = []
    baselines = {tree: [run for run in rps[(tree, "baseline")]] for tree in trees}
    for target in targets:
        ratios = {tree: statistics.median(run / base for run, base in zip(rps[(tree, target.name)], baselines[tree]))
                  for tree in trees}
        rows.append({"name": target.name, "this": round(ratios["this"], 4), "other": round(ratios["other"], 4),
                     "change": round(ratios["this"] / ratios["other"] - 1, 3)})
    return rows


def main(argv: list[str] | None = None) -> int:
    args = parse(sys.argv[1:] if argv is None else argv)
    os.environ["DJANGO_SETTINGS_MODULE"] = "repojournal.settings.bench"
    os.environ.setdefault("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/bench")
    from .database import ensure_bench_database

    ensure_bench_database(os.environ["DATABASE_URL"])
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", interactive=False, verbosity=0)
    results = compare(args)
    text = json.dumps(results, indent=1)
    if args.output:
        args.output.write_text(text + "\n")
    for state, rows in results["phases"].items():
        print(f"\n{state}: ratio to the baseline (this / other), change")
        for row in rows:
            print(f"  {row['name']:<40} {row['this']:.3f} / {row['other']:.3f}  {row['change']:+.1%}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
