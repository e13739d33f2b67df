"""``python -m bench``: run the benchmark and write bench/results.json and docs/benchmarks.md.

``--quick`` is the CI mode (tiny scale, one-second runs); its results go to a
temporary file and never overwrite the committed numbers. The database named by
DATABASE_URL is emptied and refilled, so its name must contain "bench".
"""
import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent
DEFAULT_DATABASE = "postgres://postgres@127.0.0.1:5432/bench"


def parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="CI mode: tiny scale, short runs.")
    parser.add_argument("--scale", type=float, help="Fraction of the issue's default archive (1.0 = 50,000 posts).")
    parser.add_argument("--no-tenth", action="store_true", help="Skip the run at a tenth of the scale.")
    parser.add_argument("--rounds", type=int, help="Rounds of alternating targets (at least 2).")
    parser.add_argument("--seconds", type=float, help="Seconds of load per target per round.")
    parser.add_argument("--warmup", type=float, help="Seconds of unrecorded load before each measured run.")
    parser.add_argument("--only-edge", action="store_true",
                        help="Only the edge phase (Varnish + two app instances), printed as JSON.")
    parser.add_argument("--edge-publishes", type=int, help="Publishes timed in the edge phase (default 50).")
    parser.add_argument("--edge-failover-seconds", type=float, help="Load while one instance is killed (default 30).")
    parser.add_argument("--only-replicas", action="store_true",
                        help="Only the read-replica phase (a streaming replica + two topologies), printed as JSON.")
    parser.add_argument("--replica-deliveries", type=int, help="Webhook deliveries in the replica lag burst (1,000).")
    parser.add_argument("--replica-writes", type=int, help="Write-then-read loops of the read-your-writes check (300).")
    parser.add_argument("--only-newsletters", action="store_true",
                        help="Only the newsletter phase (one digest to many subscribers over SMTP), printed as JSON.")
    parser.add_argument("--newsletter-subscribers", type=int,
                        help="Subscribers the newsletter phase mails (100,000; 2,000 in quick mode).")
    parser.add_argument("--only-admin", action="store_true",
                        help="Only the admin side by side at the full archive and a tenth (both generated), as JSON.")
    parser.add_argument("--only-renames", action="store_true",
                        help="Only the busiest author's rename in the admin, at a tenth and the full archive, as JSON.")
    parser.add_argument("--only-drafting", action="store_true",
                        help="Only the model writer's own time on a 50-, 200- and 500-change day, as JSON.")
    parser.add_argument("--drafting-sizes", type=lambda text: tuple(int(n) for n in text.split(",")),
                        help="Day sizes (changes) of the drafting phase, comma-separated (50,200,500).")
    parser.add_argument("--only-previews", action="store_true",
                        help="Only the admin's preview of a 20,000-character body, as JSON.")
    parser.add_argument("--preview-rounds", type=int, help="Previews timed in the preview phase (20; 3 in quick mode).")
    parser.add_argument("--output", type=Path, help="Where to write results JSON.")
    parser.add_argument("--docs", type=Path, help="Markdown file to update (default docs/benchmarks.md; not in quick).")
    return parser.parse_args(argv)


def configure(args: argparse.Namespace):
    """The run's Config from the defaults (or QUICK) overridden by the command line."""
    from .run import QUICK, Config

    config = QUICK if args.quick else Config()
    overrides = {"scale": args.scale, "rounds": args.rounds, "seconds": args.seconds,
                 "warmup_seconds": args.warmup, "edge_publishes": args.edge_publishes,
                 "edge_failover_seconds": args.edge_failover_seconds,
                 "replica_deliveries": args.replica_deliveries, "replica_writes": args.replica_writes,
                 "newsletter_subscribers": args.newsletter_subscribers, "drafting_sizes": args.drafting_sizes,
                 "preview_rounds": args.preview_rounds}
    for name, value in overrides.items():
        if value is not None:
            setattr(config, name, value)
    config.tenth = not args.no_tenth
    if config.rounds < 2:
        raise SystemExit("--rounds must be at least 2: targets alternate over at least two rounds.")
    return config


def prepare_environment() -> None:
    os.environ["DJANGO_SETTINGS_MODULE"] = "repojournal.settings.bench"
    os.environ.setdefault("DATABASE_URL", DEFAULT_DATABASE)
    from .database import ensure_bench_database

    ensure_bench_database(os.environ["DATABASE_URL"])


def main(argv: list[str] | None = None) -> int:
    args = parse(sys.argv[1:] if argv is None else argv)
    prepare_environment()
    import django

    django.setup()
    from . import report
    from .database import ensure_own_broker
    from .run import run

    ensure_own_broker()

    config = configure(args)
    if args.only_edge:
        from .run import run_edge_only

        edge = run_edge_only(config)
        print(json.dumps(edge, indent=1))
        return refuse_failed_edits(report.failed_edits({"checks": report.edge_checks(edge)}))
    if args.only_replicas:
        from .run import run_replicas_only

        replicas = run_replicas_only(config)
        print(json.dumps(replicas, indent=1))
        return refuse_violations(report.replica_violations({"checks": report.replica_checks(replicas)}))
    if args.only_newsletters:
        from .run import run_newsletters_only

        newsletters = run_newsletters_only(config)
        print(json.dumps(newsletters, indent=1))
        return refuse_lost(report.newsletter_failures({"checks": report.newsletter_checks(newsletters)}))
    if args.only_admin:
        from .run import run_admin_only
        from .side_by_side import checks

        admin = run_admin_only(config)
        print(json.dumps({**admin, "checks": checks(admin)}, indent=1))
        return 0  # a bar missed is a finding, as in the full run, not a failed run
    if args.only_renames:
        from .renames import checks
        from .run import run_renames_only

        measured = run_renames_only(config)
        print(json.dumps({"scales": measured, "checks": checks(measured)}, indent=1))
        return 0  # a bar missed is a finding, as in the full run
    if args.only_drafting:
        from .drafting import checks
        from .run import run_drafting_only

        measured = run_drafting_only(config)
        print(json.dumps({**measured, "checks": checks(measured)}, indent=1))
        return 0  # a bar missed is a finding, as in the full run
    if args.only_previews:
        from .run import run_previews_only

        print(json.dumps(run_previews_only(config), indent=1))
        return 0  # reported, with no bar to miss
    results = report.build(run(config), quick=args.quick)
    default_output = Path(tempfile.gettempdir()) / "repojournal-bench-quick.json" if args.quick else (
        BENCH_DIR / "results.json")
    output = args.output or default_output
    output.write_text(json.dumps(results, indent=1) + "\n")
    print(f"results: {output}")
    docs = args.docs or (None if args.quick else BENCH_DIR.parent / "docs" / "benchmarks.md")
    if docs:
        report.write_docs(results, docs)
        print(f"docs: {docs}")
    print(report.table(results))
    return (refuse_failed_edits(report.failed_edits(results)) | refuse_violations(report.replica_violations(results))
            | refuse_lost(report.newsletter_failures(results)))


def refuse_failed_edits(failures: list[str]) -> int:
    """1 when an edge edit failed: the phase's hit ratio was then measured with fewer purges than it claims."""
    for failure in failures:
        print(f"bench: the edge phase failed: {failure}", file=sys.stderr)
    return 1 if failures else 0


def refuse_violations(failures: list[str]) -> int:
    """1 when a client that wrote read an older version than it wrote (or its writes failed): the routing is wrong."""
    for failure in failures:
        print(f"bench: the read-replica phase failed: {failure}", file=sys.stderr)
    return 1 if failures else 0


def refuse_lost(failures: list[str]) -> int:
    """1 when a subscriber got no email, or two, or a delivery was left unsent: the sending is wrong."""
    for failure in failures:
        print(f"bench: the newsletter phase failed: {failure}", file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
