"""Where outbound requests may go: the same guard as feed fetching (package `egress`).

Endpoint URLs must be https in production (OUTBOUND_REQUIRE_HTTPS) and may not point at
loopback, private or link-local addresses; ``egress.client()`` checks the address it actually
connects to, so a name that resolves elsewhere later (DNS rebinding) is refused too. Tests allow
127.0.0.0/8 and ::1 through EGRESS_ALLOWED_NETWORKS.
"""
import ipaddress
import socket
from urllib.parse import urlsplit

import httpx
from django.conf import settings

try:
    from egress import RefusedAddress, check_url, client
except ImportError:  # pragma: no cover - MINIMAL STAND-IN until branch `security` (package egress) is merged
    # TODO(integrator): delete this fallback once `egress` is merged; it checks the resolved
    # addresses when an endpoint is saved and before each request, not the connected socket.
    class RefusedAddress(ValueError):
        """A URL that outbound requests may not reach."""

    def _allowed(address) -> bool:
        networks = [ipaddress.ip_network(net) for net in getattr(settings, "EGRESS_ALLOWED_NETWORKS", [])]
        if any(address in net for net in networks if net.version == address.version):
            return True
        return address.is_global and not address.is_multicast

    def check_url(url: str, require_https: bool = False) -> None:
        parts = urlsplit(url)
        if parts.scheme not in ("https", "http") or (require_https and parts.scheme != "https"):
            raise RefusedAddress("Only https URLs are allowed." if require_https else "Only http(s) URLs.")
        if not parts.hostname:
            raise RefusedAddress("The URL has no host.")
        try:
            infos = socket.getaddrinfo(parts.hostname, parts.port or 443, proto=socket.IPPROTO_TCP)
        except (socket.gaierror, UnicodeError) as exc:
            raise RefusedAddress(f"The host {parts.hostname} does not resolve.") from exc
        for info in infos:
            address = ipaddress.ip_address(info[4][0].split("%")[0])
            if not _allowed(address):
                raise RefusedAddress(f"{parts.hostname} resolves to {address}, a non-public address.")

    def client(**kwargs) -> httpx.Client:
        return httpx.Client(**kwargs)


def check_endpoint_url(url: str) -> None:
    """Raise RefusedAddress (a ValueError) unless outbound requests may go to `url`."""
    check_url(url, require_https=settings.OUTBOUND_REQUIRE_HTTPS)


__all__ = ["RefusedAddress", "check_endpoint_url", "client"]
