"""deploy/varnish/default.vcl on its own: what deploy/topology.py changes in it, that it compiles,
and that only the purgers ACL may purge (a lone varnishd: PURGE is answered before any backend)."""
import contextlib
import importlib.util
import shutil
import subprocess
import time

import httpx
import pytest
from werkzeug import Response

from .conftest import PROJECT_DIR, free_port, wait_for

needs_varnish = pytest.mark.skipif(
    shutil.which("varnishd") is None,
    reason="varnishd is not installed (apt-get install varnish varnish-modules; .ci/run installs them)",
)


def load_topology():
    spec = importlib.util.spec_from_file_location("deploy_topology", PROJECT_DIR / "deploy" / "topology.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def rendered(app_ports=("8001", "8002"), purgers=("127.0.0.1", "::1")) -> str:
    topology = load_topology()
    return topology.render_vcl(topology.VCL_TEMPLATE.read_text(), app_ports, list(purgers))


@contextlib.contextmanager
def lone_varnish(tmp_path, vcl: str, *options: str):
    """varnishd with `vcl` on a free port, stopped afterwards; yields its base URL."""
    (tmp_path / "default.vcl").write_text(vcl)
    port = free_port()
    varnish = subprocess.Popen(
        ["varnishd", "-F", "-j", "none", "-a", f"127.0.0.1:{port}", "-f", str(tmp_path / "default.vcl"),
         "-n", str(tmp_path / "work"), "-s", "malloc,16m", "-T", "127.0.0.1:0", *options],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        varnish.terminate()
        varnish.wait(timeout=30)
        time.sleep(0.1)


def test_rendering_changes_only_the_backend_ports_and_the_purgers():
    template = load_topology().VCL_TEMPLATE.read_text()
    vcl = rendered(("9101", "9102"), ("10.0.0.5", "10.0.0.0/24"))
    assert '.port = "9101";' in vcl and '.port = "9102";' in vcl and '.port = "8001";' not in vcl
    assert 'acl purgers {\n    "10.0.0.5";\n    "10.0.0.0/24";\n}' in vcl and '"::1";' not in vcl
    assert len(vcl.splitlines()) == len(template.splitlines())
    assert rendered() == template


@needs_varnish
def test_the_vcl_compiles(tmp_path):
    (tmp_path / "default.vcl").write_text(rendered())
    result = subprocess.run(["varnishd", "-C", "-j", "none", "-f", str(tmp_path / "default.vcl"), "-n", str(tmp_path / "work")],
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stderr[-2000:]


@needs_varnish
def test_only_the_purgers_may_purge(tmp_path):
    # 192.0.2.1 (TEST-NET-1) is the only purger: this test's requests from 127.0.0.1 are not.
    with lone_varnish(tmp_path, rendered((str(free_port()), str(free_port())), ("192.0.2.1",))) as base:
        def answers():
            try:
                return httpx.request("PURGE", f"{base}/", timeout=2)
            except httpx.HTTPError:
                return None

        by_url = wait_for(answers, 30, interval=0.2)
        assert by_url is not None, "varnishd did not start"
        by_keys = httpx.request("PURGE", f"{base}/", headers={"xkey-purge": "site"}, timeout=2)
        assert by_url.status_code == by_keys.status_code == 405
        assert "not allowed" in by_keys.text


@needs_varnish
def test_an_instance_whose_dependencies_are_away_stays_in_the_edge(tmp_path, httpserver):
    """The app as it is while Redis is down: /health/ (every dependency) fails, /health/live/ answers.

    The edge must keep sending it requests -- a webhook stored in PostgreSQL answers 202 without
    Redis -- instead of marking it sick and answering 503 itself (issue 25: 189 of 300
    deliveries refused by the edge during a 15 s Redis restart).
    """
    httpserver.expect_request("/health/live/").respond_with_data("live\n")
    httpserver.expect_request("/health/ready/").respond_with_data("Database: OK\n")
    httpserver.expect_request("/health/").respond_with_data("Cache: unavailable\n", status=500)
    httpserver.expect_request("/webhooks/github", method="POST").respond_with_json({"status": "queued"}, status=202)
    with lone_varnish(tmp_path, rendered((str(httpserver.port), str(httpserver.port)))) as base:
        def probed_three_times():  # by then a probe of /health/ would have marked the instance sick
            return sum(request.path.startswith("/health/") for request, _ in httpserver.log) >= 6

        assert wait_for(probed_three_times, 30, interval=0.2), "varnishd did not probe the instance"
        answers = [httpx.post(f"{base}/webhooks/github", content=b"{}", timeout=5).status_code for _ in range(5)]
        assert answers == [202] * 5


@needs_varnish
def test_while_no_instance_reads_its_database_expired_pages_are_served_stale(tmp_path, httpserver):
    """PostgreSQL away: /health/live/ answers, /health/ready/ does not, and pages answer 503.

    The edge still routes to the instance (writes get the app's own 503 with Retry-After), but
    a page past its s-maxage is served stale for its whole stale-if-error -- not just the 60 s
    of stale-while-revalidate it gets while the app can render pages. A VCL routing by
    liveness alone would answer this reader with the 503 (the page expired 62 s ago).
    """
    pages = iter([200])
    httpserver.expect_request("/health/live/").respond_with_data("live\n")
    httpserver.expect_request("/health/ready/").respond_with_data("Database: unavailable\n", status=500)
    httpserver.expect_request("/health/").respond_with_data("Database: unavailable\n", status=500)
    httpserver.expect_request("/posts/").respond_with_handler(lambda request: Response(
        "the page as it was", status=next(pages, 503),
        headers={"Cache-Control": "public, max-age=0, s-maxage=1, stale-while-revalidate=60, stale-if-error=86400"}))
    vcl = rendered((str(httpserver.port), str(httpserver.port)))
    with lone_varnish(tmp_path, vcl, "-p", "default_grace=0s") as base:
        def answered():
            try:
                return httpx.get(f"{base}/posts/", timeout=5)
            except httpx.HTTPError:
                return None

        first = wait_for(answered, 30, interval=0.2)
        assert first is not None and first.status_code == 200
        time.sleep(62)  # past s-maxage + the 60 s a healthy app's pages get
        stale = httpx.get(f"{base}/posts/", timeout=5)
        assert (stale.status_code, stale.text) == (200, "the page as it was")
