"""Turn a run into bench/results.json, a Markdown table, the issue's pass/fail checks and an SVG chart.

Every check is computed from the measured numbers; nothing here is typed in.
"""
import datetime
import os
import platform
import re
import subprocess
from importlib import metadata
from pathlib import Path

from django.core.cache import caches
from django.db import connection

from . import drafting, previews, renames, side_by_side

BARS = {("page", "cold"): 0.10, ("page", "warm"): 0.70, ("feed", "warm"): 0.70, ("page", "warm-redis"): 0.70,
        ("feed", "warm-redis"): 0.70, ("api", "none"): 0.15,
        ("webhook", "none"): 0.30}
SEARCH_P99_MS = 150
DEEP_PAGE_TOLERANCE = 0.20
MAX_QUERIES = 8
#: The newsroom (an admin page, signed in): session, user, permissions, time zone, one statement per section.
#: The superuser's lists fit it too (issue 26): session, user, the estimated count, the page, its prefetches
#: (10 for posts), and the most cited digest's change form (inlines fed from select_related: 10).
ADMIN_MAX_QUERIES = 12
INGESTION_REFERENCES_PER_SECOND = 2000
#: The edge phase's targets (issue 16): hits vs the baseline, publish -> visible, hit ratio under edits, failover.
EDGE_HITS_RATIO, EDGE_PUBLISH_P99_S, EDGE_HIT_RATIO = 5, 2.0, 0.95
DOCS_START, DOCS_END = "<!-- bench:results:start -->", "<!-- bench:results:end -->"
DEEP_PAIRS = [("tag page 100", "tag page 1"), ("api digests cursor 100", "api digests page 1"),
              ("api posts cursor 100", "api posts page 1")]


def machine() -> dict:
    cpu = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                if line.startswith("model name")), platform.processor()) if Path("/proc/cpuinfo").exists() else ""
    memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    return {"cpu": cpu, "cpus": os.cpu_count(), "memory_gib": round(memory, 1), "os": platform.platform()}


def versions() -> dict:
    with connection.cursor() as cursor:
        cursor.execute("SELECT version()" if connection.vendor == "postgresql" else "SELECT sqlite_version()")
        database = cursor.fetchone()[0].split(" on ")[0]
    found = {"python": platform.python_version(), "database": database, "cache": caches["default"].__class__.__name__}
    for package in ("Django", "gunicorn", "psycopg", "django-ninja", "redis", "celery"):
        found[package] = metadata.version(package)
    client = getattr(caches["default"], "_cache", None)
    if client is not None and hasattr(client, "get_client"):
        found["redis-server"] = client.get_client().info("server")["redis_version"]
    wrk = subprocess.run(["wrk", "--version"], capture_output=True, text=True)
    found["wrk"] = (wrk.stdout or wrk.stderr).split(" [")[0].strip()
    return found


def _key(item: dict) -> tuple[str, str]:
    return item["name"], item["cache"]


def compare_scales(large: list[dict], small: list[dict]) -> None:
    """Annotate each target of the large scale with its small-scale figures and the change in throughput."""
    smaller = {_key(item): item for item in small}
    for item in large:
        other = smaller.get(_key(item))
        if other:
            item["tenth_scale"] = {k: other[k] for k in ("rps", "p50_ms", "p99_ms", "queries", "ratio")}
            item["change_from_tenth"] = round(item["ratio"] / other["ratio"] - 1, 3) if other["ratio"] else None


def _check(name: str, value, bar: str, ok: bool) -> dict:
    return {"check": name, "value": value, "bar": bar, "ok": bool(ok)}


def checks(targets: list[dict], ingestion: dict) -> list[dict]:
    """The issue's targets, each judged on this run's numbers."""
    found = []
    by_key = {_key(item): item for item in targets}
    for item in targets:
        bar = BARS.get((item["kind"], item["cache"]))
        if bar is not None:
            found.append(_check(f"{item['name']} ({item['cache']}) ratio", item["ratio"], f">= {bar}",
                                item["ratio"] >= bar))
        if item["kind"] != "baseline":
            limit = ADMIN_MAX_QUERIES if item["kind"] == "admin" else MAX_QUERIES
            found.append(_check(f"{item['name']} ({item['cache']}) queries", item["queries"], f"<= {limit}",
                                item["queries"] <= limit))
        if "tenth_scale" in item and item["kind"] != "baseline":
            found.append(_check(f"{item['name']} ({item['cache']}) queries same at both scales",
                                f"{item['tenth_scale']['queries']} -> {item['queries']}", "equal",
                                item["tenth_scale"]["queries"] == item["queries"]))
            if item["kind"] in ("page", "feed") and item["change_from_tenth"] is not None:
                found.append(_check(f"{item['name']} ({item['cache']}) throughput tenth -> full scale",
                                    item["change_from_tenth"], ">= -0.20", item["change_from_tenth"] >= -0.20))
    for deep, first in DEEP_PAIRS:
        for state in ("cold", "warm", "warm-redis", "none"):
            if (deep, state) in by_key and (first, state) in by_key:
                change = round(by_key[(deep, state)]["rps"] / by_key[(first, state)]["rps"] - 1, 3)
                found.append(_check(f"{deep} vs {first} ({state}) throughput", change,
                                    f">= -{DEEP_PAGE_TOLERANCE}", change >= -DEEP_PAGE_TOLERANCE))
    if ("search", "cold") in by_key:
        p99 = by_key[("search", "cold")]["p99_ms"]
        found.append(_check("search (cold) p99 ms", p99, f"<= {SEARCH_P99_MS}", p99 <= SEARCH_P99_MS))
    rate = ingestion.get("references", {}).get("references_per_second")
    if rate is not None:
        found.append(_check("ingestion references/s", rate, f">= {INGESTION_REFERENCES_PER_SECOND}",
                            rate >= INGESTION_REFERENCES_PER_SECOND))
    return found


def edge_checks(edge: dict | None) -> list[dict]:
    """The edge phase judged. An edit that did not answer 200 purged nothing, so the hit ratio beside it
    was measured with fewer purges than it claims: the edits are a check of their own, and the run
    fails when one fails (``failed_edits``)."""
    if not edge or "skipped" in edge:
        return []
    under_edits, publish = edge["hit_ratio_with_an_edit_per_second"], edge["publish_to_visible"]
    edits, failed = under_edits["edits"], under_edits["failed_edits"]
    found = [_check(f"edge: {t['name'].removeprefix('edge: ')} hits ratio", t["ratio"], f">= {EDGE_HITS_RATIO}",
                    t["ratio"] >= EDGE_HITS_RATIO) for t in edge["targets"] if t["name"] != "baseline"]
    return found + [
        _check("edge: publish -> visible p99 s", publish["p99_s"], f"<= {EDGE_PUBLISH_P99_S}",
               publish["p99_s"] <= EDGE_PUBLISH_P99_S),
        _check("edge: edits answered 200", f"{edits - failed}/{edits}", "all", edits > 0 and failed == 0),
        _check("edge: hit ratio with an edit a second", under_edits["hit_ratio"], f">= {EDGE_HIT_RATIO}",
               under_edits["hit_ratio"] >= EDGE_HIT_RATIO),
        _check("edge: failed requests with an instance killed", edge["failover"]["failed"], "0",
               edge["failover"]["failed"] == 0),
    ]


#: The read-replica phase's checks that make the run fail: a client read an older version than it wrote.
REPLICA_FAILURES = ("replicas: read-your-writes violations", "replicas: writes answered 200")


def replica_checks(replicas: dict | None) -> list[dict]:
    """The read-replica phase judged: no read-your-writes violation (every write answered, so the loop ran),
    and the replica served each load's "with" rounds (table scans there: more than none -- PostgreSQL's
    backends publish their counts at most once a second, so a short run under-counts; before the compiled
    statements followed the router, the lists' count was exactly 0): only the first two fail the run."""
    if not replicas or "skipped" in replicas:
        return []
    ryw = replicas["read_your_writes"]
    writes, failed = ryw["writes"], ryw["failed_writes"]
    return [
        _check(REPLICA_FAILURES[0], ryw["violations"], "0", writes > 0 and ryw["violations"] == 0),
        _check(REPLICA_FAILURES[1], f"{writes - failed}/{writes}", "all", writes > 0 and failed == 0),
    ] + [_check(f"replicas: {t['name']} read on the replica (its table scans per request)",
                t["replica_scans_per_request"], "> 0", t["replica_scans_per_request"] > 0)
         for t in replicas["throughput"]["targets"]]


def replica_violations(results: dict) -> list[str]:
    """Why the read-replica phase failed (a write not read back, a write refused), or nothing."""
    return [f"{c['check']}: {c['value']}" for c in results["checks"] if c["check"] in REPLICA_FAILURES and not c["ok"]]


#: The newsletter phase's checks that make the run fail: a subscriber got no email or two, or one was left unsent.
NEWSLETTER_FAILURES = ("newsletters: messages received / subscribers", "newsletters: deliveries not sent")


def newsletter_checks(phase: dict | None) -> list[dict]:
    """The newsletter phase judged (bench/newsletters.py): the ratio to the smtplib ceiling and the flat memory
    are targets; a lost or repeated email, or a delivery left unsent, also fails the run."""
    from .newsletters import checks as judged

    return [_check(*found) for found in judged(phase)]


def newsletter_failures(results: dict) -> list[str]:
    return [f"{c['check']}: {c['value']}" for c in results["checks"] if c["check"] in NEWSLETTER_FAILURES
            and not c["ok"]]


def failed_edits(results: dict) -> list[str]:
    """Why the edge phase's measurement cannot be trusted (its edits' failures), or nothing."""
    return [f"{c['check']}: {c['value']}" for c in results["checks"] if c["check"] == "edge: edits answered 200"
            and not c["ok"]]


def build(raw: dict, *, quick: bool) -> dict:
    scales = raw["scales"]
    main, smaller = scales[-1], (scales[0] if len(scales) > 1 else None)
    if smaller:
        compare_scales(main["targets"], smaller["targets"])
    return {
        "generated_at": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "quick": quick, "machine": machine(), "versions": versions(), "config": raw["config"],
        "scale": main["scale"], "scale_factor": main["factor"], "generation_seconds": main["generation_seconds"],
        "targets": main["targets"],
        "tenth_scale": smaller and {"scale": smaller["scale"], "scale_factor": smaller["factor"],
                                    "generation_seconds": smaller["generation_seconds"],
                                    "targets": smaller["targets"]},
        "ingestion": raw["ingestion"],
        "admin_side_by_side": raw.get("admin_side_by_side"),
        "renames": [{"scale_factor": scale["factor"], **scale["renames"]} for scale in scales if scale.get("renames")],
        "checks": checks(main["targets"], raw["ingestion"]) + side_by_side.checks(raw.get("admin_side_by_side"))
        + renames.checks(scales)
        + edge_checks(raw.get("edge")) + replica_checks(raw.get("replicas")) + newsletter_checks(raw.get("newsletters"))
        + (drafting.checks(raw["drafting"]) if raw.get("drafting") else []),
        "edge": raw.get("edge"), "replicas": raw.get("replicas"), "newsletters": raw.get("newsletters"),
        "drafting": raw.get("drafting"), "previews": raw.get("previews"),
    }


def _percent(value) -> str:
    return "" if value is None else f"{value:+.0%}"


def table(results: dict) -> str:
    lines = ["| target | cache | req/s | p50 ms | p99 ms | queries | ratio | at 1/10 scale | change |",
             "|---|---|---:|---:|---:|---:|---:|---:|---:|"]
    for item in results["targets"]:
        tenth = item.get("tenth_scale") or {}
        tenth_text = f"{tenth['rps']} req/s, {tenth['ratio']}×, {tenth['queries']} q" if tenth else ""
        name = f"{item['name']} ({item['note']})" if item.get("note") else item["name"]
        lines.append(f"| {name} | {item['cache']} | {item['rps']} | {item['p50_ms']} | {item['p99_ms']} | "
                     f"{item['queries']} | {item['ratio']}× | {tenth_text} | {_percent(item.get('change_from_tenth'))} |")
    return "\n".join(lines)


def checks_table(results: dict) -> str:
    lines = ["| check | measured | bar | met |", "|---|---:|---:|---|"]
    lines += [f"| {c['check']} | {c['value']} | {c['bar']} | {'yes' if c['ok'] else '**no**'} |"
              for c in results["checks"]]
    return "\n".join(lines)


def generated_section(results: dict, chart_name: str) -> str:
    scale = ", ".join(f"{value:,} {name.replace('_', ' ')}" for name, value in results["scale"].items())
    ingestion = results["ingestion"]
    versions_text = ", ".join(f"{name} {value}" for name, value in results["versions"].items())
    m = results["machine"]
    return "\n\n".join([
        f"Run of {results['generated_at']} at scale ×{results['scale_factor']} ({scale}); "
        f"{results['config']['rounds']} rounds × {results['config']['seconds']} s per target, "
        f"each after {results['config']['warmup_seconds']} s of warm-up.",
        f"**Machine:** {m['cpu']}, {m['cpus']} CPUs, {m['memory_gib']} GiB, {m['os']}.\n\n**Versions:** {versions_text}.",
        f"![Throughput as a ratio of the baseline]({chart_name})",
        table(results),
        "**The admin at the full archive and at a tenth, side by side (bench/side_by_side.py):** "
        + side_by_side.text(results.get("admin_side_by_side")),
        "**Renaming the archive's busiest author in the admin (bench/renames.py):** "
        + renames_text(results.get("renames")),
        "**Ingestion:** " + ", ".join(f"{kind}: {value}" for kind, value in ingestion.items()),
        "**Generation (seconds):** " + ", ".join(f"{k} {v}" for k, v in results["generation_seconds"].items()),
        "**Edge (Varnish, bench/edge.py):** " + edge_text(results.get("edge")),
        "**Read replicas (bench/replicas.py):** " + replicas_text(results.get("replicas")),
        "**Newsletters (bench/newsletters.py):** " + newsletters_text(results.get("newsletters")),
        "**Drafting with a model that answers at once (bench/drafting.py):** " + drafting_text(results.get("drafting")),
        "**The admin's preview beside a Markdown field (bench/previews.py):** " + previews.text(results.get("previews")),
        "### The issue's targets, judged on this run\n\n" + checks_table(results),
    ])


def renames_text(measured: list[dict] | None) -> str:
    if not measured:
        return "not run."
    return "; ".join(f"×{m['scale_factor']}: {m['author_posts']:,} posts, save p50 {m['save_p50_ms']} ms "
                     f"(max {m['save_max_ms']} ms of {m['renames']}, {m['queries']} queries)" for m in measured) + "."


def drafting_text(measured: dict | None) -> str:
    """The model writer's own time (prompt, checks, saving; the model's wait excluded) per day size."""
    if not measured:
        return "not run."
    return "; ".join(f"{m['changes']} changes: writer {m['writer_ms']} ms ({m['writer_ms_per_change']} ms a change; "
                     f"model call {m['model_ms']} ms)" for m in measured["sizes"]) + (
        f"; per change, largest day ÷ smallest ×{measured['growth']}." if measured["growth"] is not None else ".")


def _kb(count: int) -> str:
    return f"{count / 1000:.1f} KB"


def edge_hit_text(target: dict) -> str:
    """One edge target: its ratio to the baseline, and its bytes as a browser gets them and uncompressed."""
    text = f"{target['name'].removeprefix('edge: ')} {target['ratio']}×"
    sizes = target.get("bytes")
    if sizes:
        text += f" ({_kb(sizes['compressed'])} {sizes['encoding']}, {_kb(sizes['uncompressed'])} uncompressed)"
    return text


def edge_text(edge: dict | None) -> str:
    """The edge phase in one paragraph: hits as ratios to the baseline with bytes per page, publish latency,
    hit ratio with every edit's fate, failover."""
    if not edge or "skipped" in edge:
        return f"skipped ({(edge or {}).get('skipped', 'not run')})."
    hits = ", ".join(edge_hit_text(t) for t in edge["targets"] if t["name"] != "baseline")
    publish, ratio, failover = edge["publish_to_visible"], edge["hit_ratio_with_an_edit_per_second"], edge["failover"]
    return (f"hits {hits} the baseline (target ≥ 5×); publish → visible p99 {publish['p99_s']} s over "
            f"{publish['publishes']} (≤ 2 s); hit ratio {ratio['hit_ratio']:.1%} with {ratio['edits']} edits in "
            f"{ratio['seconds']} s, {ratio['failed_edits']} failed (≥ 95%, none failed); {failover['failed']} failed "
            f"of {failover['requests']} requests with one instance killed during {failover['seconds']} s (0).")


def replicas_text(replicas: dict | None) -> str:
    """The read-replica phase: reads and searches per second without and with the replica (a table), the lag
    during the webhook burst, read-your-writes."""
    if not replicas or "skipped" in replicas:
        return f"skipped ({(replicas or {}).get('skipped', 'not run')})."
    loads, lag, ryw = replicas["throughput"], replicas["lag_during_burst"], replicas["read_your_writes"]
    lines = [f"both app instances loaded at once, {loads['rounds']} alternating rounds × {loads['seconds']} s.", "",
             "| req/s (p99 ms) | without the replica | with it | change | table scans on the replica per request |",
             "|---|---:|---:|---:|---:|"]
    lines += [f"| {t['name']} | {t['without_rps']} ({t['p99_ms']['without']}) | {t['with_rps']} ({t['p99_ms']['with']}) "
              f"| {_percent(t['change'])} | {t['replica_scans_per_request']} |" for t in loads["targets"]]
    caught_up = lag["caught_up_after_processing_s"]
    answers = ", ".join(f"{count} × {status}" for status, count in lag["statuses"].items())
    lines += ["", f"Lag during a burst of {lag['deliveries']:,} signed webhook deliveries (answered {answers} in "
              f"{lag['posting_seconds']} s; {lag['processed']} processed {lag['processed_seconds']} s after the first "
              f"was posted): max {lag['max_lag_s']} s, p95 {lag['p95_lag_s']} s, max {lag['max_lag_bytes']:,} bytes "
              f"over {lag['samples']} samples, {lag['samples_over_max_lag']} over DATABASE_REPLICA_MAX_LAG "
              f"({lag['max_lag_setting_s']} s); caught up "
              + (f"{caught_up} s after the last was processed." if caught_up is not None else "**not** within 120 s.")
              + f" Read-your-writes: **{ryw['violations']} violations** in {ryw['writes']} PUT-then-GET loops "
              f"({ryw['failed_writes']} writes failed; 0 and 0 required); a client that never wrote read the older "
              f"version after {ryw['other_client_saw_older']} of them ({ryw['replica_scans']:,} table scans on the "
              "replica meanwhile)."]
    return "\n".join(lines)


def newsletters_text(phase: dict | None) -> str:
    """The newsletter phase in one paragraph: our rate beside the smtplib ceiling, memory, what arrived."""
    if not phase or "skipped" in phase:
        return f"skipped ({(phase or {}).get('skipped', 'not run')})."
    sending, ceiling, received, memory = phase["sending"], phase["ceiling"], phase["received"], phase["memory"]
    states = ", ".join(f"{count:,} {state}" for state, count in phase["deliveries"].items())
    return (f"one digest ({_kb(phase['email_bytes'])} an email) to {phase['subscribers']:,} subscribers: "
            f"**{sending['messages_per_second']} messages/s** ({sending['messages']:,} in {sending['seconds']} s, "
            f"{sending['worker_processes']} worker process, batches of {sending['batch_size']}) against a bare "
            f"smtplib loop's {ceiling['messages_per_second']} messages/s to the same server (before the send "
            f"{ceiling['before']['messages_per_second']}, after {ceiling['after']['messages_per_second']}): "
            f"**{phase['ratio']}×** (≥ 0.6). Fan-out {phase['fanout_seconds']} s; the first email arrived "
            f"{sending['first_message_after_fanout_began_s']} s after it began. Worker RSS "
            f"{memory.get('pool_first_tenth_kib')} KiB "
            f"in the first tenth of the send, {memory.get('pool_last_tenth_kib')} KiB in the last "
            f"({_percent(memory['change'])}; ±10%). The server received {received['messages']:,} messages for "
            f"{received['recipients']:,} recipients ({received['recipients_with_more_than_one']} got more than one) "
            f"with {received['distinct_unsubscribe_links']:,} distinct unsubscribe links; deliveries: {states}.")


def write_docs(results: dict, path: Path) -> None:
    """Replace the generated block of the Markdown file (created if missing) and write the chart next to it."""
    from .chart import ratio_chart

    chart = path.with_name("benchmarks.svg")
    chart.write_text(ratio_chart(results["targets"]))
    block = f"{DOCS_START}\n{generated_section(results, chart.name)}\n{DOCS_END}"
    text = path.read_text() if path.exists() else f"# Benchmarks\n\n{DOCS_START}\n{DOCS_END}\n"
    pattern = re.compile(re.escape(DOCS_START) + ".*?" + re.escape(DOCS_END), re.DOTALL)
    path.write_text(pattern.sub(lambda _: block, text, count=1))
