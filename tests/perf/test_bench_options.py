"""`python -m bench` options reach the run's Config (the full runs documented in docs/benchmarks.md use them)."""
import pytest

from bench.__main__ import configure, parse


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
