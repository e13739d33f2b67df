"""`python -m bench` options reach the run's Config (the full runs documented in docs/benchmarks.md use them)."""
import pytest

from bench import report
from bench.__main__ import configure, parse, refuse_failed_edits


def test_command_line_options_override_the_defaults():
    config = configure(parse(["--rounds", "3", "--seconds", "2.5", "--warmup", "1", "--scale", "0.2", "--no-tenth"]))
    assert (config.rounds, config.seconds, config.warmup_seconds, config.scale, config.tenth) == (3, 2.5, 1, 0.2, False)


def test_defaults_are_the_issue_scale_with_a_tenth_run():
    config = configure(parse([]))
    assert (config.scale, config.tenth, config.rounds) == (1.0, True, 2) and config.warmup_seconds > 0


def test_fewer_than_two_rounds_is_refused():
    with pytest.raises(SystemExit, match="at least 2"):
        configure(parse(["--rounds", "1"]))


def test_edge_phase_options_reach_the_config():
    config = configure(parse(["--edge-publishes", "7", "--edge-failover-seconds", "4"]))
    assert (config.edge_publishes, config.edge_failover_seconds) == (7, 4)
    assert parse(["--only-edge"]).only_edge and not parse([]).only_edge


def edge_phase(edit_statuses: list[int]) -> dict:
    """An edge phase's results as bench/edge.py writes them, with these edits."""
    failed = sum(status != 200 for status in edit_statuses)
    return {
        "targets": [{"name": "baseline", "ratio": 1.0}, {"name": "edge: home", "ratio": 9.0}],
        "publish_to_visible": {"p99_s": 0.1},
        "hit_ratio_with_an_edit_per_second": {"edits": len(edit_statuses), "edit_statuses": edit_statuses,
                                              "failed_edits": failed, "hit_ratio": 0.998},
        "failover": {"failed": 0},
    }


def test_a_failed_edge_edit_fails_its_check_and_the_run():
    """Issue 25: 9 of 19 edits answered 429 and the phase still reported its hit ratio as measured."""
    failed = {check["check"]: check for check in report.edge_checks(edge_phase([200, 429, 200]))}
    assert failed["edge: edits answered 200"] == {"check": "edge: edits answered 200", "value": "2/3", "bar": "all",
                                                  "ok": False}
    assert failed["edge: hit ratio with an edit a second"]["ok"]  # judged on its own; the edits say why not to trust it
    assert refuse_failed_edits(report.failed_edits({"checks": list(failed.values())})) == 1
    passed = report.edge_checks(edge_phase([200, 200]))
    assert all(check["ok"] for check in passed) and refuse_failed_edits(report.failed_edits({"checks": passed})) == 0
    assert not report.edge_checks({"skipped": "no varnishd"})


def test_the_rename_phase_runs_alone():
    assert parse(["--only-renames"]).only_renames and not parse([]).only_renames


def test_newsletter_phase_options_reach_the_config():
    config = configure(parse(["--newsletter-subscribers", "500"]))
    assert config.newsletter_subscribers == 500
    assert parse(["--only-newsletters"]).only_newsletters and not parse([]).only_newsletters


def newsletter_phase(received: int, unsent: int = 0) -> dict:
    """A newsletter phase's results as bench/newsletters.py writes them, for 10 subscribers."""
    states = {"sent": 10 - unsent, **({"queued": unsent} if unsent else {})}
    return {"subscribers": 10, "ratio": 0.7, "deliveries": states,
            "received": {"messages": received, "recipients": received, "recipients_with_more_than_one": 0,
                         "distinct_unsubscribe_links": received}, "memory": {"change": 0.02}}


def test_a_lost_newsletter_fails_its_check_and_the_run():
    from bench.__main__ import refuse_lost

    lost = report.newsletter_checks(newsletter_phase(received=9, unsent=1))
    assert {check["check"] for check in lost if not check["ok"]} == {
        "newsletters: messages received / subscribers", "newsletters: distinct unsubscribe links",
        "newsletters: deliveries not sent"}
    assert refuse_lost(report.newsletter_failures({"checks": lost})) == 1
    passed = report.newsletter_checks(newsletter_phase(received=10))
    assert all(check["ok"] for check in passed) and refuse_lost(report.newsletter_failures({"checks": passed})) == 0
    assert not report.newsletter_checks({"skipped": "no Redis"})


def test_a_side_by_side_change_is_the_median_of_each_rounds_pair():
    """Issue 26: each round pairs the full archive with the tenth; a slow round on both cancels out."""
    from bench.load import Load
    from bench.side_by_side import checks, summarise

    def runs(*rps):
        return [Load(requests=round(value * 10), seconds=10, p50_ms=1, p99_ms=2, errors=0) for value in rps]

    item = summarise("admin posts", {"full": runs(95, 50, 104), "tenth": runs(100, 50, 100)})
    assert item["round_changes"] == [-0.05, 0.0, 0.04] and item["change"] == 0.0
    assert (item["full_rps"], item["tenth_rps"]) == (95, 100)
    moved = summarise("admin posts", {"full": runs(80, 85, 120), "tenth": runs(100, 100, 100)})
    assert moved["change"] == -0.15
    judged = checks({"targets": [item, moved]})
    assert [(check["check"], check["ok"]) for check in judged] == [
        ("admin posts (none) throughput tenth -> full scale", True),
        ("admin posts (none) throughput tenth -> full scale", False)]


def test_the_drafting_phase_runs_alone_with_its_sizes():
    assert parse(["--only-drafting"]).only_drafting and not parse([]).only_drafting
    assert configure(parse(["--drafting-sizes", "3,9"])).drafting_sizes == (3, 9)
    assert configure(parse([])).drafting_sizes == (50, 200, 500)


@pytest.mark.django_db
def test_the_drafting_phase_measures_the_writer_against_a_local_model_server():
    """Tiny days, against bench/drafting.py's own server: every size drafted by the model whole, then cleaned up."""
    from bench import drafting
    from digests.models import Digest, Topic

    measured = drafting.measure(sizes=(3, 6), rounds=2)  # two days of each size: their numbers do not collide
    assert [size["changes"] for size in measured["sizes"]] == [3, 6]
    assert all(size["writer_ms"] > 0 and size["model_ms"] > 0 for size in measured["sizes"])
    assert measured["growth"] == round(measured["sizes"][1]["writer_ms_per_change"]
                                       / measured["sizes"][0]["writer_ms_per_change"], 2)
    assert [check["check"] for check in drafting.checks(measured)] == [
        "model writer's own time per change, 6 vs 3 changes"]
    assert "3 changes: writer" in report.drafting_text(measured)
    assert not Topic.objects.filter(slug="bench-drafting").exists() and not Digest.objects.exists()


def test_the_preview_phase_runs_alone_with_its_rounds():
    assert parse(["--only-previews"]).only_previews and not parse([]).only_previews
    assert configure(parse(["--preview-rounds", "7"])).preview_rounds == 7
    assert configure(parse([])).preview_rounds == 20 and configure(parse(["--quick"])).preview_rounds == 3


@pytest.mark.django_db
def test_the_preview_phase_times_the_endpoint_on_a_20000_character_body_and_cleans_up():
    """Issue 37: the admin's preview of a long body, as an Editor, through the endpoint writing.js calls."""
    from bench import previews
    from digests.models import Digest, Topic

    measured = previews.measure(rounds=2)
    assert measured["chars"] == 20_000 and measured["rounds"] == 2 and measured["citations"] == previews.REFERENCES
    assert 0 < measured["render_p50_ms"] and 0 < measured["p50_ms"] <= measured["p90_ms"] <= measured["max_ms"]
    assert previews.text(measured).startswith("20,000 characters citing 20 references: p50 ")
    assert not Topic.objects.filter(slug=previews.SLUG).exists() and not Digest.objects.filter(slug=previews.SLUG).exists()
