"""egress refuses inside addresses at validation and at connect time, with the allow-list empty."""
import ipaddress
import socket

import httpx
import pytest

import egress

REAL_GETADDRINFO = socket.getaddrinfo


def answers(*ips, port=80):
    return [(socket.AF_INET6 if ":" in ip else socket.AF_INET, socket.SOCK_STREAM, 6, "",
             (ip, port) if ":" not in ip else (ip, port, 0, 0)) for ip in ips]


@pytest.fixture
def dns(monkeypatch):
    """A resolver for *.test names: {name: [ip, …]}, or a callable for answers that change."""
    table = {}

    def getaddrinfo(host, port, *args, **kwargs):
        if host in table:
            ips = table[host]() if callable(table[host]) else table[host]
            return answers(*ips, port=port)
        return REAL_GETADDRINFO(host, port, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    return table


@pytest.mark.parametrize(("address", "reason"), [
    ("127.0.0.1", "loopback"), ("127.9.9.9", "loopback"), ("::1", "loopback"),
    ("10.1.2.3", "private"), ("172.16.0.1", "private"), ("192.168.1.1", "private"), ("fd00::1", "private"),
    ("169.254.169.254", "link-local"), ("fe80::1", "link-local"),
    ("224.0.0.1", "multicast"), ("239.1.1.1", "multicast"), ("ff02::1", "multicast"),
    ("0.0.0.0", "unspecified"), ("::", "unspecified"), ("240.0.0.1", "reserved"),
    ("100.64.0.1", "non-global"), ("::ffff:127.0.0.1", "IPv4-mapped loopback"),
    ("::ffff:169.254.169.254", "IPv4-mapped link-local"), ("2002:7f00:1::", "6to4 loopback"),
    ("fec0::1", "site-local"),
])
def test_inside_addresses_are_refused(address, reason):
    assert egress.refusal(ipaddress.ip_address(address)) == reason


@pytest.mark.parametrize("address", ["93.184.215.14", "2606:4700:4700::1111", "::ffff:8.8.8.8", "1.1.1.1"])
def test_public_addresses_pass(address):
    assert egress.refusal(ipaddress.ip_address(address)) is None


def test_an_allowed_network_lets_its_addresses_through_and_no_others():
    allowed = egress.allowed_networks(["127.0.0.0/8", "::1"])
    assert egress.refusal(ipaddress.ip_address("127.0.0.1"), allowed) is None
    assert egress.refusal(ipaddress.ip_address("::ffff:127.0.0.1"), allowed) is None
    assert egress.refusal(ipaddress.ip_address("10.0.0.1"), allowed) == "private"


@pytest.mark.parametrize(("url", "named"), [
    ("http://127.0.0.1/feed", "127.0.0.1 is a loopback address"),
    ("http://169.254.169.254/latest/meta-data/", "169.254.169.254 is a link-local address"),
    ("http://[::1]:8000/feed", "::1 is a loopback address"),
    ("http://2130706433/", "loopback address"),  # the decimal form resolves to loopback too
    ("http://internal.test/feed", "'internal.test' resolves to 10.0.0.7, which is a private address"),
    ("http://mixed.test/feed", "'mixed.test' resolves to 192.168.0.2, which is a private address"),
])
def test_check_url_refuses_inside_hosts_naming_host_and_address(settings, dns, url, named):
    settings.EGRESS_ALLOWED_NETWORKS = []
    dns.update({"internal.test": ["10.0.0.7"], "mixed.test": ["93.184.215.14", "192.168.0.2"]})
    with pytest.raises(egress.RefusedAddress, match=named.replace(".", r"\.")):
        egress.check_url(url)


@pytest.mark.parametrize(("url", "message"), [
    ("ftp://example.test/feed", "scheme must be http or https"), ("file:///etc/passwd", "scheme"),
    ("http:///nohost", "host"), ("http://nowhere.invalid/", "does not resolve"),
])
def test_check_url_refuses_other_schemes_and_bad_hosts(settings, url, message):
    settings.EGRESS_ALLOWED_NETWORKS = []
    with pytest.raises(egress.RefusedAddress, match=message):
        egress.check_url(url)


def test_check_url_accepts_public_hosts_and_can_require_https(settings, dns):
    settings.EGRESS_ALLOWED_NETWORKS = []
    dns["public.test"] = ["93.184.215.14"]
    egress.check_url("https://public.test/feed.atom")
    egress.check_url("http://public.test/feed.atom")
    with pytest.raises(egress.RefusedAddress, match="scheme must be https"):
        egress.check_url("http://public.test/feed.atom", require_https=True)


def test_the_client_refuses_to_connect_to_loopback_with_the_setting_empty(settings, httpserver):
    settings.EGRESS_ALLOWED_NETWORKS = []
    httpserver.expect_request("/feed").respond_with_data("secret")
    refused = r"'localhost' resolves to (127\.0\.0\.1|::1), which is a loopback address"
    with egress.client() as http, pytest.raises(egress.RefusedAddress, match=refused):
        http.get(httpserver.url_for("/feed"))
    assert httpserver.log == []  # nothing reached the server


def test_the_client_connects_where_the_setting_allows(settings, httpserver):
    settings.EGRESS_ALLOWED_NETWORKS = ["127.0.0.0/8"]
    httpserver.expect_request("/feed").respond_with_data("hello")
    with egress.client() as http:
        response = http.get(httpserver.url_for("/feed"))
    assert response.text == "hello"


def test_dns_rebinding_is_refused_at_connect_time(settings, dns, httpserver):
    """The name resolves to a public address when validated, to loopback when connected."""
    settings.EGRESS_ALLOWED_NETWORKS = []
    httpserver.expect_request("/feed").respond_with_data("secret")
    replies = iter([["93.184.215.14"], ["127.0.0.1"]])
    dns["rebind.test"] = lambda: next(replies)
    url = f"http://rebind.test:{httpserver.port}/feed"
    egress.check_url(url)  # the form saw a public address
    with egress.client() as http, pytest.raises(egress.RefusedAddress, match="resolves to 127.0.0.1"):
        http.get(url)
    assert httpserver.log == []


def test_the_client_connects_to_the_checked_address_keeping_the_host_header(settings, dns, httpserver):
    settings.EGRESS_ALLOWED_NETWORKS = ["127.0.0.0/8"]
    dns["feeds.test"] = ["127.0.0.1"]
    httpserver.expect_request("/feed").respond_with_data("ok")
    with egress.client() as http:
        assert http.get(f"http://feeds.test:{httpserver.port}/feed").text == "ok"
    request, _ = httpserver.log[0]
    assert request.headers["Host"] == f"feeds.test:{httpserver.port}"


def test_a_redirect_to_an_inside_address_is_refused(settings, dns, httpserver):
    settings.EGRESS_ALLOWED_NETWORKS = ["127.0.0.1/32"]
    dns["inside.test"] = ["10.0.0.5"]
    httpserver.expect_request("/feed").respond_with_data(
        "", status=302, headers={"Location": "http://inside.test/latest/meta-data/"})
    with egress.client(follow_redirects=True) as http, pytest.raises(egress.RefusedAddress, match="10.0.0.5"):
        http.get(httpserver.url_for("/feed"))


def test_the_client_will_not_take_a_proxy_or_transport():
    for name, value in (("proxy", "http://127.0.0.1:3128"), ("transport", httpx.HTTPTransport()),
                        ("mounts", {}), ("trust_env", True)):
        with pytest.raises(TypeError, match=name):
            egress.client(**{name: value})
