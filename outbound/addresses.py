"""Where outbound requests may go: the same guard as feed fetching (package `egress`).

Endpoint URLs must be https in production (OUTBOUND_REQUIRE_HTTPS) and may not point at
loopback, private or link-local addresses: ``check_url`` says so when an endpoint is saved, and
``egress.client()`` checks the address it actually connects to on every attempt, so a name that
resolves elsewhere later (DNS rebinding) is refused too. Tests allow 127.0.0.0/8 and ::1 through
EGRESS_ALLOWED_NETWORKS.
"""
from django.conf import settings

from egress import RefusedAddress, check_url, client


def check_endpoint_url(url: str) -> None:
    """Raise RefusedAddress (a ValueError) unless outbound requests may go to `url`."""
    check_url(url, require_https=settings.OUTBOUND_REQUIRE_HTTPS)


__all__ = ["RefusedAddress", "check_endpoint_url", "client"]
