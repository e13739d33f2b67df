"""Purge backends against local HTTP servers: Varnish nodes accepting PURGE, and servers checking
requests against Fastly's and Cloudflare's documented purge APIs."""
import datetime
import json
import socket

import pytest
from pytest_httpserver import HTTPServer
from werkzeug import Response

from edge import outbox, purging
from edge.models import Purge


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture
def varnish(settings, httpserver):
    settings.EDGE_PURGE_BACKEND = "varnish"
    settings.EDGE_VARNISH_URLS = [httpserver.url_for("/").rstrip("/")]
    return httpserver


def test_varnish_keys_go_as_one_xkey_purge_to_every_node(settings, varnish):
    second = HTTPServer(port=free_port())
    second.start()
    try:
        settings.EDGE_VARNISH_URLS = [*settings.EDGE_VARNISH_URLS, second.url_for("/")]
        for node in (varnish, second):
            expected = node.expect_request("/", method="PURGE", headers={"xkey-purge": "post-1 posts site"})
            expected.respond_with_data("ok")
        assert purging.backend().purge(["site", "post-1", "posts", "post-1"]) == []
        varnish.check_assertions()
        second.check_assertions()
    finally:
        second.stop()


def test_a_varnish_page_purge_is_purge_on_the_path_without_keys(varnish):
    varnish.expect_request("/posts/hello/", method="PURGE").respond_with_data("ok")
    assert purging.backend().purge_urls(["/posts/hello/"]) == []
    assert "xkey-purge" not in varnish.log[0][0].headers


def test_a_node_that_is_down_is_retried_alone_until_it_answers(settings, varnish):
    """One node answers, the other is down (nothing listens): the retry goes to the second only,
    and succeeds once a server listens there."""
    down = f"http://127.0.0.1:{free_port()}"
    settings.EDGE_VARNISH_URLS = [*settings.EDGE_VARNISH_URLS, down]
    varnish.expect_request("/", method="PURGE").respond_with_data("ok")
    assert purging.backend().purge(["post-1"]) == [down]
    revived = HTTPServer(port=int(down.rsplit(":", 1)[1]))
    revived.expect_request("/", method="PURGE", headers={"xkey-purge": "post-1"}).respond_with_data("ok")
    revived.start()
    try:
        assert purging.backend().purge(["post-1"], [down]) == []
        assert len(varnish.log) == 1 and len(revived.log) == 1
    finally:
        revived.stop()


@pytest.mark.django_db
def test_a_recorded_purge_is_retried_with_backoff_until_the_node_answers(settings, varnish):
    """The row stays while the node refuses, due again after 1, 2, 4 … s; the sweep sends it when due."""
    answers = iter([503, 503, 200])
    varnish.expect_request("/", method="PURGE").respond_with_handler(lambda request: Response("", next(answers)))
    outbox.send_now(["post-1"])
    row = Purge.objects.get()
    assert (row.attempts, row.targets) == (1, settings.EDGE_VARNISH_URLS)
    assert outbox.sweep() == 0, "not due yet: backoff"
    later = row.next_attempt_at + datetime.timedelta(seconds=1)
    assert outbox.sweep(now=later) == 0 and Purge.objects.get().attempts == 2
    assert outbox.sweep(now=later + datetime.timedelta(seconds=3)) == 1
    assert not Purge.objects.exists() and len(varnish.log) == 3
    assert [outbox.backoff(n) for n in range(1, 9)] == [1, 2, 4, 8, 16, 32, 60, 60]


@pytest.mark.django_db
def test_a_purge_is_given_up_only_after_its_retries(settings, varnish):
    settings.EDGE_PURGE_MAX_RETRIES = 3
    varnish.expect_request("/", method="PURGE").respond_with_data("", status=500)
    outbox.send_now(["post-1"])
    for _ in range(2):
        assert Purge.objects.exists()
        outbox.send(now=Purge.objects.get().next_attempt_at)
    assert not Purge.objects.exists() and len(varnish.log) == 3


@pytest.fixture
def fastly(settings, httpserver):
    settings.EDGE_PURGE_BACKEND = "fastly"
    settings.EDGE_FASTLY_API_URL = httpserver.url_for("").rstrip("/")
    settings.EDGE_FASTLY_SERVICE_ID = "SU1Z0isxPaozGVKXdv0eY"
    settings.EDGE_FASTLY_API_TOKEN = "fastly-token"
    return httpserver


def fastly_purge(request):
    """Fastly's batch purge: POST /service/{id}/purge, Fastly-Key, keys in Surrogate-Key, at most 256."""
    keys = request.headers.get("Surrogate-Key", "").split()
    if request.headers.get("Fastly-Key") != "fastly-token" or not 0 < len(keys) <= 256:
        return Response("bad request", 400)
    return Response(json.dumps({key: f"purge-{key}" for key in keys}), 200, content_type="application/json")


def test_fastly_batches_keys_as_its_api_documents(fastly, settings):
    settings.EDGE_FASTLY_SOFT_PURGE = True
    fastly.expect_request("/service/SU1Z0isxPaozGVKXdv0eY/purge", method="POST",
                          headers={"Fastly-Soft-Purge": "1"}).respond_with_handler(fastly_purge)
    keys = [f"post-{n}" for n in range(300)]
    assert purging.backend().purge(keys) == []
    sent = [request.headers["Surrogate-Key"].split() for request, _ in fastly.log]
    assert [len(batch) for batch in sent] == [256, 44] and sorted(sum(sent, [])) == sorted(keys)


def test_a_refused_fastly_purge_is_a_failure(fastly, settings):
    settings.EDGE_FASTLY_API_TOKEN = "wrong"
    fastly.expect_request("/service/SU1Z0isxPaozGVKXdv0eY/purge").respond_with_handler(fastly_purge)
    assert purging.backend().purge(["site"]) == ["fastly"]


@pytest.fixture
def cloudflare(settings, httpserver):
    settings.EDGE_PURGE_BACKEND = "cloudflare"
    settings.EDGE_CLOUDFLARE_API_URL = httpserver.url_for("").rstrip("/")
    settings.EDGE_CLOUDFLARE_ZONE_ID = "023e105f4ecef8ad9ca31a8372d0c353"
    settings.EDGE_CLOUDFLARE_API_TOKEN = "cf-token"
    return httpserver


def cloudflare_purge(request):
    """Cloudflare's purge_cache: Bearer token, JSON with "tags" (at most 30 a call) or "files"."""
    body = request.get_json(silent=True) or {}
    tags, files = body.get("tags"), body.get("files")
    ok = (request.headers.get("Authorization") == "Bearer cf-token"
          and ((isinstance(tags, list) and 0 < len(tags) <= 30) or (isinstance(files, list) and files)))
    answer = {"success": ok, "errors": [] if ok else [{"code": 1012, "message": "Request must contain one of"}],
              "messages": [], "result": {"id": "023e105f4ecef8ad9ca31a8372d0c353"} if ok else None}
    return Response(json.dumps(answer), 200 if ok else 400, content_type="application/json")


def test_cloudflare_purges_tags_thirty_a_call(cloudflare):
    cloudflare.expect_request("/client/v4/zones/023e105f4ecef8ad9ca31a8372d0c353/purge_cache",
                              method="POST").respond_with_handler(cloudflare_purge)
    keys = [f"post-{n}" for n in range(65)]
    assert purging.backend().purge(keys) == []
    sent = [request.get_json()["tags"] for request, _ in cloudflare.log]
    assert [len(batch) for batch in sent] == [30, 30, 5] and sorted(sum(sent, [])) == sorted(keys)


def test_cloudflare_purges_a_page_by_its_full_url(cloudflare, settings):
    settings.SITE_URL = "https://repojournal.example"
    cloudflare.expect_request("/client/v4/zones/023e105f4ecef8ad9ca31a8372d0c353/purge_cache",
                              method="POST").respond_with_handler(cloudflare_purge)
    assert purging.backend().purge_urls(["/posts/hello/"]) == []
    assert cloudflare.log[0][0].get_json() == {"files": ["https://repojournal.example/posts/hello/"]}
