"""`make bench`'s quick mode, end to end, so the harness cannot rot. CI runs it; the numbers are not judged.

It generates a tiny archive into its own PostgreSQL database (the suite's name
with ``_bench``) and Redis database, serves it with gunicorn, loads it with wrk
and checks the shape and the internal consistency of what it wrote. (The
harness also runs on a SQLite file, which ``python -m bench`` accepts; the
SQLite branches below are kept for that, though the suite runs them only on
PostgreSQL, as ``make bench`` does.)
"""
import json
import os
import shutil
import statistics
import subprocess
import sys
from pathlib import Path
from urllib.parse import urlsplit

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGES = {"home", "wire", "digest page", "posts", "post page", "tag page 1", "tag page 100", "author page", "search",
         "posts atom feed", "repository page"}
#: The admin's lists, searches, a filtered list and the heaviest change form, as a superuser (issue 26).
ADMIN_NAMES = {"admin posts", "admin posts search", "admin digests", "admin digests search", "admin references",
               "admin references search", "admin references merged", "admin deliveries", "admin deliveries search",
               "admin digest change form", "admin post change form"}
UNCACHED = {"api digests page 1", "api digests cursor 100", "api posts page 1", "api posts cursor 100",
            "webhook (verify + store + enqueue)", "newsroom (Publisher)", *ADMIN_NAMES}

pytestmark = [
    pytest.mark.skipif(shutil.which("wrk") is None, reason="wrk is not installed (apt-get install wrk); CI installs it"),
    # `make bench` runs on PostgreSQL and Redis only (the Makefile's BENCH_DATABASE_URL and BENCH_REDIS_URL), so
    # its harness is run end to end in the suite's PostgreSQL + Redis pass (CI's second). On SQLite it measured a
    # setup `make bench` never uses, in 7 of `make test`'s minutes (issue 39: `make test` within 10 minutes).
    pytest.mark.skipif(not os.environ.get("DATABASE_URL", "").startswith("postgres") or not os.environ.get("REDIS_URL"),
                       reason="`make bench` runs on PostgreSQL + Redis: its quick run is tested in CI's PostgreSQL + "
                              "Redis pass (set DATABASE_URL and REDIS_URL)"),
]


def bench_environment(tmp_path: Path) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if key not in ("DATABASE_URL", "REDIS_URL")}
    database = os.environ.get("DATABASE_URL", "")
    if database.startswith("postgres"):
        parts = urlsplit(database)
        env["DATABASE_URL"] = parts._replace(path=f"{parts.path.rstrip('/')}_bench").geturl()
    else:
        env["DATABASE_URL"] = f"sqlite:///{tmp_path / 'bench.sqlite3'}"
    if os.environ.get("REDIS_URL"):  # the harness clears it: the database the settings name, no other
        env["REDIS_URL"] = own_redis_database(os.environ["REDIS_URL"])
    return env


def own_redis_database(url: str) -> str:
    """The Redis database after the suite's, as the bench's PostgreSQL database is its own: the session's edge
    topology (tests/edge) keeps a worker on the suite's queue until the session ends, and the bench refuses a
    queue other workers consume (bench/database.py)."""
    parts = urlsplit(url)
    number = int(parts.path.strip("/") or 0)
    return parts._replace(path=f"/{(number + 1) % 16}").geturl()


def drop_bench_databases(url: str) -> None:
    """The bench's PostgreSQL database and its copies, as an earlier run (a killed one, or one of older
    code whose migrations had other names: seen in CI, "relation ... already exists") left them."""
    if not url.startswith("postgres"):
        return
    from bench.database import admin_connection

    name = urlsplit(url).path.strip("/")
    with admin_connection(url) as connection:
        for (found,) in connection.execute("SELECT datname FROM pg_database WHERE datname LIKE %s",
                                           [f"{name}%"]).fetchall():
            connection.execute(f'DROP DATABASE "{found}" WITH (FORCE)')


@pytest.fixture(scope="module")
def quick_run(tmp_path_factory):
    tmp_path = tmp_path_factory.mktemp("bench")
    output, docs = tmp_path / "results.json", tmp_path / "benchmarks.md"
    drop_bench_databases(bench_environment(tmp_path)["DATABASE_URL"])
    # ~15 min on 2 cores (its edge, replica and newsletter phases each start a topology): 30 min is a safety net.
    completed = subprocess.run(
        [sys.executable, "-m", "bench", "--quick", "--output", str(output), "--docs", str(docs)],
        cwd=ROOT, env=bench_environment(tmp_path), capture_output=True, text=True, timeout=1800,
    )
    assert completed.returncode == 0, completed.stderr[-4000:]
    return json.loads(output.read_text()), docs


def by_key(targets: list[dict]) -> dict[tuple[str, str], dict]:
    return {(item["name"], item["cache"]): item for item in targets}


def test_every_target_of_the_issue_is_measured_cold_and_warm(quick_run):
    results, _ = quick_run
    measured = set(by_key(results["targets"]))
    phases = ("cold", "warm", "warm-redis")
    expected = {(name, state) for name in PAGES | {"baseline"} for state in phases}
    expected |= {(name, "none") for name in UNCACHED}
    assert measured == expected


def test_figures_are_measured_and_ratios_are_to_the_same_phase_baseline(quick_run):
    results, _ = quick_run
    targets = by_key(results["targets"])
    for (name, state), item in targets.items():
        assert item["rps"] > 0 and 0 < item["p50_ms"] <= item["p99_ms"], name
        assert len(item["rounds"]) >= 2, name
        baseline = targets[("baseline", "cold" if state == "none" else state)]
        low, high = ratio_bounds(item["rps"], baseline["rps"])
        assert low <= item["ratio"] <= high, (name, item["ratio"], low, high)


def ratio_bounds(rps: float, baseline_rps: float) -> tuple[float, float]:
    """What the stored ratio can be given the stored figures: req/s are rounded to 0.1 and the ratio, taken from
    the unrounded ones, to 4 places (at a few req/s the rounding alone moves it by percents; a ratio to another
    phase's baseline is off by far more)."""
    return ((rps - 0.05) / (baseline_rps + 0.05) - 5e-5, (rps + 0.05) / (baseline_rps - 0.05) + 5e-5)


def test_warm_pages_are_served_from_the_cache_without_sql(quick_run):
    results, _ = quick_run
    targets = by_key(results["targets"])
    for name in PAGES:
        assert targets[(name, "cold")]["queries"] > 0, name
        assert targets[(name, "warm")]["queries"] == targets[(name, "warm-redis")]["queries"] == 0, name


def test_the_tenth_scale_is_compared(quick_run):
    results, _ = quick_run
    assert results["tenth_scale"]["scale"]["posts"] < results["scale"]["posts"]
    assert len(results["tenth_scale"]["targets"]) == len(results["targets"])
    for item in results["targets"]:
        assert item["tenth_scale"]["rps"] > 0
        expected = item["ratio"] / item["tenth_scale"]["ratio"] - 1
        assert item["change_from_tenth"] == pytest.approx(expected, rel=0.02, abs=2e-3)


def test_checks_ingestion_and_docs_are_written(quick_run):
    results, docs = quick_run
    assert {"check", "value", "bar", "ok"} <= set(results["checks"][0])
    assert any(check["check"] == "search (cold) p99 ms" for check in results["checks"])
    references = results["ingestion"]["references"]
    assert references["stored"] == references["listing_items"] > 0
    assert references["references_per_second"] > 0
    text = docs.read_text()
    assert "| target | cache | req/s |" in text and "benchmarks.svg" in text
    assert docs.with_name("benchmarks.svg").read_text().startswith("<svg")


def test_the_busiest_authors_rename_in_the_admin_is_timed_at_both_scales(quick_run):
    """Issue 39: the save of a renamed author must not grow with their posts (bench/renames.py)."""
    results, docs = quick_run
    renames = results["renames"]
    assert [item["scale_factor"] for item in renames] == [results["tenth_scale"]["scale_factor"],
                                                          results["scale_factor"]]
    assert renames[0]["author_posts"] < renames[1]["author_posts"]
    for item in renames:
        assert item["renames"] >= 3 and 0 < item["save_p50_ms"] <= item["save_max_ms"] and item["queries"] > 0
    judged = [check for check in results["checks"] if check["check"].startswith("rename of the busiest author")]
    assert [check["value"] for check in judged] == [item["save_max_ms"] for item in renames]
    assert "Renaming the archive's busiest author in the admin" in docs.read_text()


def test_the_edge_is_measured_or_skipped_with_a_reason(quick_run):
    results, docs = quick_run
    edge = results["edge"]
    assert "**Edge (Varnish, bench/edge.py):**" in docs.read_text()
    if "skipped" in edge:  # no varnishd, or SQLite: the reason is written down
        assert edge["skipped"]
        return
    hits = [target for target in edge["targets"] if target["name"] != "baseline"]
    assert len(hits) == 4 and all(target["rps"] > 0 and target["errors"] == 0 for target in hits)
    assert edge["publish_to_visible"]["publishes"] > 0 and edge["publish_to_visible"]["p99_s"] > 0
    assert edge["failover"]["requests"] > 0 and edge["failover"]["failed"] == 0


def test_read_replicas_are_measured_or_skipped_with_a_reason(quick_run):
    """Issue 29: reads per second with and without a replica (which served them), lag in a burst, and
    read-your-writes through the edge with no violation."""
    results, docs = quick_run
    replicas = results["replicas"]
    assert "**Read replicas (bench/replicas.py):**" in docs.read_text()
    if "skipped" in replicas:  # no varnishd, no local PostgreSQL or pg_basebackup: the reason is written down
        assert replicas["skipped"]
        return
    targets = {target["name"]: target for target in replicas["throughput"]["targets"]}
    assert set(targets) == {"token API lists", "token API details and filtered lists", "searches"}
    for target in targets.values():
        assert target["without_rps"] > 0 and target["with_rps"] > 0 and target["errors"] == 0
        # The replica served them. More than none, not one a request: backends publish their table counts
        # at most once a second, so the quick run's one-second loads under-count (0.72 a list request seen).
        assert target["replica_scans_per_request"] > 0, target
    burst = replicas["lag_during_burst"]
    assert burst["processed"] == burst["deliveries"] > 0 and burst["samples"] > 0
    assert burst["max_lag_s"] >= 0 and burst["caught_up_after_processing_s"] is not None
    ryw = replicas["read_your_writes"]
    assert ryw["writes"] > 0 and ryw["failed_writes"] == 0 and ryw["violations"] == 0


def test_the_newsroom_is_reported_beside_the_reader_pages_with_its_scale_and_query_checks(quick_run):
    """Issue 26: the admin's front page, signed in as a Publisher, as a ratio to the baseline at both scales."""
    results, docs = quick_run
    newsroom = by_key(results["targets"])[("newsroom (Publisher)", "none")]
    assert newsroom["kind"] == "admin" and newsroom["path"] == "/admin/" and newsroom["queries"] > 0
    assert newsroom["tenth_scale"]["queries"] == newsroom["queries"]
    checks = {check["check"]: check for check in results["checks"]}
    assert checks["newsroom (Publisher) (none) queries same at both scales"]["ok"]
    assert checks["newsroom (Publisher) (none) queries"]["bar"] == "<= 12"
    assert "newsroom (Publisher) (none) throughput tenth -> full scale" in checks
    assert "| newsroom (Publisher) (signed in) | none |" in docs.read_text()


def test_the_admin_lists_keep_their_queries_and_speed_between_scales(quick_run):
    """Issue 26: each admin list, search, filtered list and the change form is checked like the newsroom."""
    results, _ = quick_run
    targets = by_key(results["targets"])
    checks = {check["check"]: check for check in results["checks"]}
    for name in ADMIN_NAMES:
        item = targets[(name, "none")]
        assert item["kind"] == "admin" and item["queries"] > 0, name
        assert checks[f"{name} (none) queries"]["bar"] == "<= 12", name
        assert checks[f"{name} (none) queries same at both scales"]["ok"], name
        assert f"{name} (none) throughput tenth -> full scale" in checks, name


def test_the_admin_is_loaded_side_by_side_at_both_scales(quick_run):
    """Issue 26: the ±10% bar is judged on the two archives loaded in alternation, not on phases minutes apart."""
    results, docs = quick_run
    phase = results["admin_side_by_side"]
    assert {target["name"] for target in phase["targets"]} == ADMIN_NAMES | {"newsroom (Publisher)"}
    assert phase["rounds"] >= 5
    checks = {check["check"]: check for check in results["checks"]}
    for target in phase["targets"]:
        assert target["full_rps"] > 0 and target["tenth_rps"] > 0, target["name"]
        assert len(target["round_changes"]) == phase["rounds"], target["name"]
        assert target["change"] == pytest.approx(statistics.median(target["round_changes"]), abs=1e-3)
        check = checks[f"{target['name']} (none) throughput tenth -> full scale"]
        assert check["value"] == target["change"] and check["ok"] == (abs(target["change"]) <= 0.10)
    assert "side by side (bench/side_by_side.py):** 5 rounds" in docs.read_text()


def test_the_tenth_archive_copy_is_dropped_after_the_run(quick_run):
    _, docs = quick_run
    database = os.environ.get("DATABASE_URL", "")
    if not database.startswith("postgres"):
        assert (docs.parent / "bench.sqlite3").exists() and not (docs.parent / "bench_tenth.sqlite3").exists()
        return
    import psycopg

    name = urlsplit(bench_environment(docs.parent)["DATABASE_URL"]).path.strip("/")
    with psycopg.connect(urlsplit(database)._replace(path="/postgres").geturl()) as connection:
        found = connection.execute("SELECT datname FROM pg_database WHERE datname LIKE %s", [f"{name}%"]).fetchall()
    assert [row[0] for row in found] == [name]


def test_the_edge_reports_bytes_per_page_compressed_and_not(quick_run):
    results, docs = quick_run
    if "skipped" in results["edge"]:
        pytest.skip(results["edge"]["skipped"])
    for target in (t for t in results["edge"]["targets"] if t["name"] != "baseline"):
        sizes = target["bytes"]
        assert sizes["encoding"] == "gzip", target["name"]
        assert 0 < sizes["compressed"] < sizes["uncompressed"], target["name"]
    assert "KB gzip" in docs.read_text()


def test_every_edge_edit_is_recorded_and_answered_200(quick_run):
    """A failed edit purges nothing: the hit ratio beside it would be measured with fewer purges."""
    results, _ = quick_run
    if "skipped" in results["edge"]:
        pytest.skip(results["edge"]["skipped"])
    under_edits = results["edge"]["hit_ratio_with_an_edit_per_second"]
    assert under_edits["edits"] > 0
    assert under_edits["edit_statuses"] == [200] * under_edits["edits"], under_edits["failed_examples"]
    assert under_edits["failed_edits"] == 0
    checked = {check["check"]: check for check in results["checks"]}
    assert checked["edge: edits answered 200"]["ok"]


def test_newsletters_are_measured_or_skipped_with_a_reason(quick_run):
    """Issue 27: one digest to the quick run's subscribers through a real SMTP server, beside a bare smtplib loop
    to the same server; each subscriber received one email with its own unsubscribe link, none left unsent."""
    results, docs = quick_run
    phase = results["newsletters"]
    assert "**Newsletters (bench/newsletters.py):**" in docs.read_text()
    if "skipped" in phase:  # SQLite or no Redis: the Celery worker has no broker to share; the reason is written
        assert phase["skipped"]
        return
    subscribers = phase["subscribers"]
    assert subscribers == results["config"]["newsletter_subscribers"] > 0
    assert phase["received"] == {"messages": subscribers, "recipients": subscribers,
                                 "recipients_with_more_than_one": 0, "distinct_unsubscribe_links": subscribers}
    assert phase["deliveries"] == {"sent": subscribers}
    assert phase["sending"]["messages_per_second"] > 0 and phase["ceiling"]["messages_per_second"] > 0
    assert phase["ratio"] == pytest.approx(
        phase["sending"]["messages_per_second"] / phase["ceiling"]["messages_per_second"], rel=0.01)
    assert phase["memory"]["samples"] > 0 and phase["memory"]["pool_first_tenth_kib"] > 0
    checks = {check["check"]: check for check in results["checks"]}
    assert checks["newsletters: messages received / subscribers"]["ok"]
    assert checks["newsletters: deliveries not sent"]["ok"]
    assert {"newsletters: sending / smtplib ceiling", "newsletters: worker memory, last tenth vs first"} <= set(checks)
