"""One benchmark run: for each scale, generate, then serve cold and warm and load every target in turn.

Targets alternate (baseline, home, wire, ... baseline, home, ...) over several
rounds, each after its own warm-up, so a noisy neighbour on this shared machine
slows every target alike instead of one; ratios are taken against the baseline
measured in the same phase of the same run. The admin's pages are also loaded on
both archives side by side (bench/side_by_side.py), where the scales are compared.
"""
import statistics
import sys
import tempfile
import time
import urllib.request
from dataclasses import dataclass

from django.core.cache import cache
from django.core.management import call_command

from . import drafting, edge, hit_ratio, ingest, load, newsletters, previews, renames, replicas, side_by_side
from .generate import Generator, Scale
from .targets import Target, admin_targets, build_targets, check, count_queries, phase_env


@dataclass
class Config:
    scale: float = 1.0
    tenth: bool = True
    rounds: int = 2
    seconds: float = 10
    warmup_seconds: float = 2
    listing_items: int = 5_000
    deliveries: int = 500
    edge_publishes: int = 50
    edge_failover_seconds: float = 30
    replica_deliveries: int = 1000
    replica_writes: int = 300
    newsletter_subscribers: int = 100_000
    drafting_sizes: tuple[int, ...] = (50, 200, 500)
    preview_rounds: int = 20


CACHED_KINDS = ("page", "feed", "baseline")
#: Page cache off; on (pages in each worker's memory, the version checked in Redis once a second);
#: on with PAGE_CACHE_LOCAL_SECONDS=0 (Redis on every request).
PHASES = ("cold", "warm", "warm-redis")
QUICK = Config(scale=0.002, rounds=2, seconds=1, warmup_seconds=0, listing_items=200, deliveries=20, edge_publishes=5,
               edge_failover_seconds=5, replica_deliveries=100, replica_writes=30, newsletter_subscribers=2_000,
               drafting_sizes=(5, 20), preview_rounds=3)


def log(message: str) -> None:
    print(f"[bench {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def warm_up(url: str, target: Target, seconds: float, body_file: str) -> None:
    """A short unrecorded load (or, in quick mode, a handful of requests) before measuring."""
    if seconds >= 1:
        run_wrk(url, target, seconds, body_file)
        return
    if target.method == "POST":
        run_wrk(url, target, 1, body_file)
        return
    for _ in range(5):
        urllib.request.urlopen(url).read()


def run_wrk(url: str, target: Target, seconds: float, body_file: str) -> load.Load:
    return load.wrk(url, max(1, seconds), method=target.method, body_file=body_file if target.body else "",
                    headers=target.headers, unique_header=target.unique_header)


def measured_in(target: Target, cache_state: str) -> bool:
    """Pages, feeds and the baseline run in both phases; the API and the webhook (no page cache) once."""
    return target.kind in CACHED_KINDS or cache_state == "cold"


def phase(targets: list[Target], config: Config, cache_state: str, body_file: str) -> dict[str, list[load.Load]]:
    """Serve with the page cache on (warm) or off (cold) and load each target, round after round."""
    measured = [t for t in targets if measured_in(t, cache_state)]
    runs: dict[str, list[load.Load]] = {t.name: [] for t in measured}
    cache.clear()
    with load.gunicorn(phase_env(cache_state)) as base:
        for number in range(1, config.rounds + 1):
            log(f"{cache_state}: round {number}/{config.rounds}")
            for target in measured:
                warm_up(base + target.path, target, config.warmup_seconds, body_file)
                result = run_wrk(base + target.path, target, config.seconds, body_file)
                if result.errors:
                    raise RuntimeError(f"{target.name}: {result.errors} failed requests under load")
                runs[target.name].append(result)
    return runs


def summarise(target: Target, runs: list[load.Load], baseline_rps: float, cache_state: str, queries: int) -> dict:
    rps = statistics.median(run.rps for run in runs)
    return {
        "name": target.name, "rps": round(rps, 1), "p50_ms": round(statistics.median(r.p50_ms for r in runs), 2),
        "p99_ms": round(statistics.median(r.p99_ms for r in runs), 2), "queries": queries,
        "ratio": round(rps / baseline_rps, 4), "cache": cache_state, "kind": target.kind, "path": target.path,
        "note": target.note, "rounds": [round(run.rps, 1) for run in runs],
    }


def measure_scale(factor: float, config: Config) -> tuple[dict, list[Target]]:
    """Generate the archive at `factor` and measure every target in every phase; the figures and the targets."""
    scale = Scale().times(factor)
    log(f"generating {scale}")
    timings = Generator(scale).run()
    targets = build_targets()
    for target in targets:
        check(target)
    results = []
    with tempfile.NamedTemporaryFile(suffix=".json") as body:
        body.write(next(t.body for t in targets if t.kind == "webhook"))
        body.flush()
        for cache_state in PHASES:
            runs = phase(targets, config, cache_state, body.name)
            baseline_rps = statistics.median(run.rps for run in runs["baseline"])
            for target in targets:
                if measured_in(target, cache_state):
                    state = cache_state if target.kind in CACHED_KINDS else "none"
                    results.append(summarise(target, runs[target.name], baseline_rps, state,
                                             count_queries(target, state)[0]))
    log("admin: renaming the busiest author")
    return {"factor": factor, "scale": scale.__dict__, "generation_seconds": timings, "targets": results,
            "renames": renames.measure(config.rounds)}, targets


def measure_scales(config: Config) -> tuple[list[dict], dict | None]:
    """The tenth (when asked) and the full scale, then the admin at both side by side (bench/side_by_side.py)."""
    if not config.tenth:
        return [measure_scale(config.scale, config)[0]], None
    tenth, tenth_targets = measure_scale(config.scale / 10, config)
    scales = [tenth]

    def full_scale() -> list[Target]:
        measured, targets = measure_scale(config.scale, config)
        scales.append(measured)
        return targets

    return scales, admin_side_by_side(config, tenth_targets, full_scale)


def admin_side_by_side(config: Config, tenth_targets: list[Target], full_scale) -> dict:
    """Copy the tenth's database, make the full archive (``full_scale()``: its targets), load the admin on both."""
    tenth_url = side_by_side.snapshot()
    try:
        full_targets = full_scale()
        log("admin: the full archive and a tenth, side by side")

        def load_target(base: str, target: Target) -> load.Load:
            warm_up(base + target.path, target, config.warmup_seconds, "")
            return run_wrk(base + target.path, target, config.seconds, "")

        return side_by_side.measure([t for t in full_targets if t.kind == "admin"],
                                    [t for t in tenth_targets if t.kind == "admin"], tenth_url, config.rounds,
                                    config.seconds, load_target)
    finally:
        side_by_side.drop(tenth_url)


def run_admin_only(config: Config) -> dict:
    """`--only-admin`: generate a tenth and the full archive (nothing else measured), then the admin side by side."""
    call_command("migrate", interactive=False, verbosity=0)

    def generated(factor: float) -> list[Target]:
        log(f"generating {Scale().times(factor)}")
        Generator(Scale().times(factor)).run()
        return admin_targets()

    tenth_targets = generated(config.scale / 10)
    return admin_side_by_side(config, tenth_targets, lambda: generated(config.scale))


def run_renames_only(config: Config) -> list[dict]:
    """`--only-renames`: generate a tenth (unless --no-tenth) and the full archive, renaming the busiest author in
    the admin at each (bench/renames.py); nothing else measured."""
    call_command("migrate", interactive=False, verbosity=0)
    measured = []
    for factor in ([config.scale / 10] if config.tenth else []) + [config.scale]:
        log(f"generating {Scale().times(factor)}")
        Generator(Scale().times(factor)).run()
        measured.append({"factor": factor, "renames": renames.measure(config.rounds)})
    return measured


def run(config: Config) -> dict:
    call_command("migrate", interactive=False, verbosity=0)
    scales, admin = measure_scales(config)
    log("ingestion")
    ingestion = ingest.measure(config.listing_items, config.deliveries)
    log("page cache hit ratio under webhooks")
    reading = [target.path for target in build_targets() if target.kind in ("page", "feed")]
    ingestion["page_cache_under_webhooks"] = hit_ratio.measure(reading, seconds=max(config.seconds * 2, 4))
    ingest.cleanup()
    log("edge")
    measured_edge = measure_edge(config)
    log("read replicas")
    measured_replicas = measure_replicas(config)
    log(f"newsletters: one digest to {config.newsletter_subscribers:,} subscribers")
    measured_newsletters = newsletters.measure(config.newsletter_subscribers)
    log(f"drafting with a model that answers at once: days of {config.drafting_sizes} changes")
    measured_drafting = drafting.measure(config.drafting_sizes)
    log(f"the admin's preview of a {previews.CHARS:,}-character body")
    measured_previews = previews.measure(config.preview_rounds)
    return {"scales": scales, "admin_side_by_side": admin, "ingestion": ingestion, "edge": measured_edge,
            "replicas": measured_replicas, "newsletters": measured_newsletters, "drafting": measured_drafting,
            "previews": measured_previews, "config": config.__dict__}


def run_drafting_only(config: Config) -> dict:
    """`--only-drafting`: the model writer's own time on days of ``drafting_sizes`` changes (bench/drafting.py)."""
    call_command("migrate", interactive=False, verbosity=0)
    return drafting.measure(config.drafting_sizes)


def run_previews_only(config: Config) -> dict:
    """`--only-previews`: the admin's preview of a 20,000-character body (bench/previews.py)."""
    call_command("migrate", interactive=False, verbosity=0)
    return previews.measure(config.preview_rounds)


def measure_edge(config: Config) -> dict:
    """The edge phase (bench/edge.py) over the data generated last."""
    return edge.measure(build_targets(), config.rounds, config.seconds, config.edge_publishes,
                        config.edge_failover_seconds)


def run_edge_only(config: Config) -> dict:
    """`--only-edge`: generate at the configured scale, then only the edge phase."""
    call_command("migrate", interactive=False, verbosity=0)
    Generator(Scale().times(config.scale)).run()
    return measure_edge(config)


def measure_replicas(config: Config) -> dict:
    """The read-replica phase (bench/replicas.py) over the data generated last."""
    return replicas.measure(config.rounds, config.seconds, config.warmup_seconds, config.replica_deliveries,
                            config.replica_writes)


def run_replicas_only(config: Config) -> dict:
    """`--only-replicas`: generate at the configured scale, then only the read-replica phase."""
    call_command("migrate", interactive=False, verbosity=0)
    Generator(Scale().times(config.scale)).run()
    return measure_replicas(config)


def run_newsletters_only(config: Config) -> dict:
    """`--only-newsletters`: a tiny archive (the phase mails a copy of one digest), then only the newsletter phase."""
    call_command("migrate", interactive=False, verbosity=0)
    Generator(Scale().times(QUICK.scale)).run()
    return newsletters.measure(config.newsletter_subscribers)
