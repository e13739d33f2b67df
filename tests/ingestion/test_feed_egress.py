"""Feed URLs inside the network are refused in the admin form and again at fetch time (issue 17, item 5)."""
import socket

import pytest

from ingestion.feeds import FeedRefused, fetch_source
from ingestion.models import FeedSource, IngestionRun
from ingestion.tasks import fetch_feed

pytestmark = pytest.mark.django_db

REAL_GETADDRINFO = socket.getaddrinfo
PUBLIC = "93.184.215.14"


def answer(ip: str, port):
    return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (ip, port))]


@pytest.fixture
def no_inside(settings):
    settings.EGRESS_ALLOWED_NETWORKS = []


@pytest.fixture
def resolver(monkeypatch):
    """Names ending in .test answer from this table (a list of IPs, consumed one per lookup)."""
    table: dict[str, list[str]] = {}

    def getaddrinfo(host, port, *args, **kwargs):
        if host in table:
            ips = table[host]
            return answer(ips.pop(0) if len(ips) > 1 else ips[0], port)
        return REAL_GETADDRINFO(host, port, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    return table


def add_feed(admin_client, url: str):
    return admin_client.post("/admin/ingestion/feedsource/add/", {
        "url": url, "title": "", "default_tags": "", "enabled": "on"})


@pytest.mark.parametrize(("url", "shown"), [
    ("http://127.0.0.1/feed.atom", "127.0.0.1 is a loopback address"),
    ("http://169.254.169.254/latest/meta-data/", "169.254.169.254 is a link-local address"),
    ("http://[::1]/feed.atom", "::1 is a loopback address"),
    ("http://intranet.test/feed.atom", "&#x27;intranet.test&#x27; resolves to 10.1.2.3, which is a private address"),
])
def test_the_admin_refuses_inside_feed_urls_with_a_clear_error(admin_client, no_inside, resolver, url, shown):
    resolver["intranet.test"] = ["10.1.2.3"]
    response = add_feed(admin_client, url)
    assert response.status_code == 200  # the form again, with its error
    html = response.content.decode()
    assert "This feed cannot be fetched" in html and shown in html
    assert not FeedSource.objects.exists()


def test_the_admin_accepts_a_public_feed_url(admin_client, no_inside, resolver):
    resolver["blog.test"] = [PUBLIC]
    response = add_feed(admin_client, "https://blog.test/feed.atom")
    assert response.status_code == 302
    assert FeedSource.objects.get().url == "https://blog.test/feed.atom"


@pytest.mark.parametrize("url", ["http://127.0.0.1:{port}/feed.atom", "http://169.254.169.254/latest/meta-data/",
                                 "http://[::1]:{port}/feed.atom", "http://intranet.test:{port}/feed.atom"])
def test_a_fetch_of_an_inside_address_is_refused_and_logged_in_its_run(httpserver, no_inside, resolver, url):
    resolver["intranet.test"] = ["10.1.2.3"]
    httpserver.expect_request("/feed.atom").respond_with_data("<feed/>")
    source = FeedSource.objects.create(url=url.format(port=httpserver.port))  # saved around the form
    with pytest.raises(FeedRefused, match="refused"):
        fetch_source(source)
    run = IngestionRun.objects.get(source=IngestionRun.Source.FEED)
    assert run.status == IngestionRun.Status.FAILED
    assert "FeedRefused" in run.error and "outbound requests may not reach it" in run.error
    assert httpserver.log == []


def test_dns_rebinding_passes_the_form_but_is_refused_at_fetch_time(admin_client, httpserver, no_inside, resolver):
    """Public when the editor saves the source, loopback when the worker connects."""
    resolver["rebind.test"] = [PUBLIC, "127.0.0.1"]
    httpserver.expect_request("/feed.atom").respond_with_data("<feed/>")
    url = f"http://rebind.test:{httpserver.port}/feed.atom"
    assert add_feed(admin_client, url).status_code == 302
    source = FeedSource.objects.get(url=url)
    assert fetch_feed.apply(args=[source.pk]).get().startswith("refused:")  # not retried
    run = IngestionRun.objects.get(source=IngestionRun.Source.FEED)
    assert run.status == IngestionRun.Status.FAILED and "resolves to 127.0.0.1" in run.error
    assert httpserver.log == []
