"""`make test` under pytest-xdist: the tests that share started processes run whole on one worker, group after group."""
from .conftest import ProcessGroupScheduling


def test_a_groups_tests_are_one_unit_of_work_and_other_tests_each_their_own():
    """pytest 9 silently broke ``--dist loadgroup``'s marks: the quick bench then ran once per worker."""
    def scope(nodeid: str) -> str:
        return ProcessGroupScheduling._split_scope(None, nodeid)

    grouped = {scope("tests/perf/test_bench.py::test_the_tenth_scale_is_compared"), scope("tests/edge/test_edge.py::test_a"),
               scope("tests/edge/test_vcl.py::test_b"), scope("tests/faults/test_outages.py::test_c[redis]"),
               scope("tests/replicas/test_replicas.py::test_d"), scope("tests/images/test_s3.py::test_e")}
    assert grouped == {"started-processes"}  # one worker, one group after the other: never two side by side
    alone = "tests/perf/test_load.py::test_a_window_with_responses_is_run_once"
    assert scope(alone) == alone
