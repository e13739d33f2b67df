"""The REST client against a real local HTTP server replaying GitHub's recorded answers."""
import socket

import pytest
from werkzeug import Response

from ingestion.github import GitHubClient, GitHubError

from .replay import base_url, load


@pytest.fixture
def sleeps():
    return []


@pytest.fixture
def client(httpserver, sleeps):
    github = GitHubClient(base_url(httpserver), "test-token", sleep=sleeps.append, clock=lambda: 1_000_000.0)
    yield github
    github.close()


def requested(httpserver) -> list[str]:
    return [f"{request.path}?{request.query_string.decode()}".rstrip("?") for request, _ in httpserver.log]


def test_sends_token_and_api_headers(httpserver, client):
    record = load("Retry.testReturnsRepoAfter1Retry")[1]
    httpserver.expect_request("/repos/PyGithub/PyGithub").respond_with_response(record.response(base_url(httpserver)))
    assert client.get_json("/repos/PyGithub/PyGithub")["full_name"] == "PyGithub/PyGithub"
    request = httpserver.log[0][0]
    assert request.headers["Authorization"] == "Bearer test-token"
    assert request.headers["Accept"] == "application/vnd.github+json"
    assert request.headers["X-GitHub-Api-Version"] == "2022-11-28"
    assert "If-None-Match" not in request.headers


def test_follows_link_urls_as_given_to_the_last_page(httpserver, client):
    _, first, second, last = load("RequesterThrottleTestCase.testDeferRequests")
    url = base_url(httpserver)
    httpserver.expect_ordered_request("/repos/PyGithub/PyGithub/releases", query_string={"per_page": "100"}) \
        .respond_with_response(first.response(url))
    for record in (second, last):  # Link URLs switch to /repositories/{id}/ with their own page size
        httpserver.expect_ordered_request(record.path, query_string=record.query) \
            .respond_with_response(record.response(url))
    pages = list(client.pages("/repos/PyGithub/PyGithub/releases", {"per_page": 100}))
    assert [len(page.items) for page in pages] == [10, 10, 10]
    assert pages[-1].next_url is None
    assert pages[0].etag == first.header("ETag")
    assert requested(httpserver) == [
        "/repos/PyGithub/PyGithub/releases?per_page=100",
        "/repositories/3544490/releases?per_page=10&page=2",
        "/repositories/3544490/releases?per_page=10&page=3",
    ]
    httpserver.check_assertions()


def test_follows_cursor_links_without_page_numbers(httpserver, client):
    records = load("Repository.testGetCommits")
    url = base_url(httpserver)
    httpserver.expect_ordered_request("/repos/PyGithub/PyGithub/commits").respond_with_response(records[0].response(url))
    for record in records[1:]:
        httpserver.expect_ordered_request(record.path, query_string=record.query) \
            .respond_with_response(record.response(url))
    # the recording stops before the last page: serve one with no `next`
    httpserver.expect_ordered_request("/repos/PyGithub/PyGithub/commits",
                                      query_string="last_sha=6b89c02872cbcb179d79cb4ceb2436fee02425d0&top=master") \
        .respond_with_json([])
    pages = list(client.pages("/repos/PyGithub/PyGithub/commits"))
    assert [len(page.items) for page in pages] == [30, 30, 30, 0]
    assert requested(httpserver)[1] == (
        "/repos/PyGithub/PyGithub/commits?last_sha=c1440bdf20bfeb62684c6d1779448719dce9d2df&top=master"
    )
    httpserver.check_assertions()


def test_conditional_request_sends_the_stored_etag_and_304_means_nothing_new(httpserver, client):
    (setup,), (not_modified,), (updated,) = (load(f"ConditionalRequestUpdate.{name}")
                                             for name in ("setUp", "testDidNotUpdate", "testDidUpdate"))
    url = base_url(httpserver)
    etag = setup.header("etag")
    assert not_modified.request_headers["If-None-Match"] == etag
    httpserver.expect_ordered_request("/repos/akfish/PyGithub").respond_with_response(setup.response(url))
    httpserver.expect_ordered_request("/repos/akfish/PyGithub", headers={"If-None-Match": etag}) \
        .respond_with_response(not_modified.response(url))
    httpserver.expect_ordered_request("/repos/akfish/PyGithub", headers={"If-None-Match": etag}) \
        .respond_with_response(updated.response(url))

    assert [page.etag for page in client.pages("/repos/akfish/PyGithub")] == [etag]
    assert [(page.not_modified, page.items) for page in client.pages("/repos/akfish/PyGithub", etag=etag)] == [
        (True, [])
    ]
    changed = list(client.pages("/repos/akfish/PyGithub", etag=etag))
    assert changed[0].etag == updated.header("etag") != etag
    httpserver.check_assertions()


def test_primary_rate_limit_without_reset_backs_off_from_a_minute(httpserver, client, sleeps):
    ok, limited = load("SpecificExceptions.testRateLimitExceeded")
    url = base_url(httpserver)
    httpserver.expect_ordered_request("/users/jacquev6").respond_with_response(limited.response(url))
    httpserver.expect_ordered_request("/users/jacquev6").respond_with_response(limited.response(url))
    httpserver.expect_ordered_request("/users/jacquev6").respond_with_response(ok.response(url))
    assert client.get_json("/users/jacquev6")["login"] == "jacquev6"
    assert sleeps == [60.0, 120.0]


def test_primary_rate_limit_waits_until_reset(httpserver, client, sleeps):
    ok, limited = load("SpecificExceptions.testRateLimitExceeded")
    url = base_url(httpserver)
    reset = str(1_000_000 + 754)  # the client's clock says 1,000,000
    httpserver.expect_ordered_request("/users/jacquev6") \
        .respond_with_response(limited.response(url, **{"X-RateLimit-Reset": reset}))
    httpserver.expect_ordered_request("/users/jacquev6").respond_with_response(ok.response(url))
    client.get("/users/jacquev6")
    assert sleeps == [755.0]  # until the reset second has passed


def test_secondary_rate_limit_waits_retry_after(httpserver, client, sleeps):
    ok, limited = load("SpecificExceptions.testAuthenticatedRateLimitExceeded")
    assert limited.header("Retry-After") == "60"
    url = base_url(httpserver)
    httpserver.expect_ordered_request("/search/code", query_string="q=jacquev6") \
        .respond_with_response(limited.response(url))
    httpserver.expect_ordered_request("/search/code", query_string="q=jacquev6").respond_with_response(ok.response(url))
    assert client.get_json("/search/code", q="jacquev6")["total_count"] == 31140
    assert sleeps == [60.0]


def test_429_without_headers_backs_off_exponentially(httpserver, client, sleeps):
    for _ in range(3):
        httpserver.expect_ordered_request("/x").respond_with_data("slow down", status=429)
    httpserver.expect_ordered_request("/x").respond_with_json({"ok": True})
    assert client.get_json("/x") == {"ok": True}
    assert sleeps == [60.0, 120.0, 240.0]


def test_a_plain_403_is_an_error_not_a_wait(httpserver, client, sleeps):
    httpserver.expect_request("/private").respond_with_json({"message": "Resource not accessible"}, status=403)
    with pytest.raises(GitHubError, match="403"):
        client.get("/private")
    assert sleeps == []


def test_500_then_200_is_retried(httpserver, client, sleeps):
    error, ok = load("Retry.testReturnsRepoAfter1Retry")
    url = base_url(httpserver)
    httpserver.expect_ordered_request("/repos/PyGithub/PyGithub").respond_with_response(error.response(url))
    httpserver.expect_ordered_request("/repos/PyGithub/PyGithub").respond_with_response(ok.response(url))
    assert client.get_json("/repos/PyGithub/PyGithub")["id"] == 3544490
    assert sleeps == [1]
    assert len(httpserver.log) == 2


def test_server_errors_give_up_after_max_attempts(httpserver, sleeps):
    httpserver.expect_request("/down").respond_with_response(Response("bad gateway", status=502))
    github = GitHubClient(base_url(httpserver), sleep=sleeps.append, max_attempts=3)
    with pytest.raises(GitHubError, match="gave up after 3 attempts"):
        github.get("/down")
    assert sleeps == [1, 2]  # no pointless wait after the last attempt
    assert len(httpserver.log) == 3


def test_network_errors_are_retried_with_backoff(sleeps):
    with socket.socket() as probe:  # a port nothing listens on: connection refused
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    github = GitHubClient(f"http://127.0.0.1:{port}", sleep=sleeps.append, max_attempts=4)
    with pytest.raises(GitHubError, match="ConnectError"):
        github.get("/repos/a/b")
    assert sleeps == [1, 2, 4]
