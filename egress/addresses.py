"""Which addresses an outbound request may reach, and URL validation for forms and the API."""
import functools
import ipaddress
import socket
from collections.abc import Iterable

import httpx

Address = ipaddress.IPv4Address | ipaddress.IPv6Address
Network = ipaddress.IPv4Network | ipaddress.IPv6Network
DEFAULT_PORTS = {"http": 80, "https": 443}


class RefusedAddress(ValueError):
    """An outbound request would reach an address (or use a URL) that egress refuses."""


@functools.lru_cache(maxsize=16)
def _parse_networks(cidrs: tuple[str, ...]) -> tuple[Network, ...]:
    return tuple(ipaddress.ip_network(cidr.strip(), strict=False) for cidr in cidrs if cidr.strip())


def allowed_networks(networks: Iterable[str] | None = None) -> tuple[Network, ...]:
    """The networks let through despite being private: ``networks`` if given, else the setting."""
    if networks is None:
        from django.conf import settings

        networks = getattr(settings, "EGRESS_ALLOWED_NETWORKS", []) if settings.configured else []
    return _parse_networks(tuple(networks))


def refusal(address: Address, allowed: Iterable[Network] = ()) -> str | None:
    """Why ``address`` may not be reached ("loopback", "link-local" …), or None if it may."""
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped:
        reason = refusal(address.ipv4_mapped, allowed)
        return f"IPv4-mapped {reason}" if reason else None
    if any(address.version == network.version and address in network for network in allowed):
        return None
    if isinstance(address, ipaddress.IPv6Address) and address.sixtofour:
        reason = refusal(address.sixtofour, allowed)
        if reason:
            return f"6to4 {reason}"
    for reason, flag in (("unspecified", address.is_unspecified), ("loopback", address.is_loopback),
                         ("link-local", address.is_link_local), ("multicast", address.is_multicast),
                         ("reserved", address.is_reserved), ("private", address.is_private),
                         ("site-local", getattr(address, "is_site_local", False)),
                         ("non-global", not address.is_global)):
        if flag:
            return reason
    return None


def resolve_checked(host: str, port: int, allowed: Iterable[Network] | None = None) -> list[Address]:
    """Every address ``host`` resolves to, in the resolver's order; RefusedAddress if any is refused.

    All answers must pass, not just the first: a name with one public and one private
    address would otherwise reach inside whenever the private one is tried.
    """
    allowed = allowed_networks() if allowed is None else tuple(allowed)
    try:
        answers = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError) as exc:
        raise RefusedAddress(f"{host!r} does not resolve ({exc})") from exc
    addresses = list(dict.fromkeys(ipaddress.ip_address(answer[4][0].split("%", 1)[0]) for answer in answers))
    for address in addresses:
        reason = refusal(address, allowed)
        if reason:
            shown = host if host == str(address) else f"{host!r} resolves to {address}, which"
            raise RefusedAddress(f"{shown} is a {reason} address: outbound requests may not reach it "
                                 f"(only globally routable addresses, or EGRESS_ALLOWED_NETWORKS)")
    if not addresses:
        raise RefusedAddress(f"{host!r} does not resolve")
    return addresses


def check_url(url: str, *, require_https: bool = False, allowed: Iterable[str] | None = None) -> None:
    """Raise RefusedAddress unless ``url`` is http(s) and every address of its host may be reached."""
    try:
        parsed = httpx.URL(url)
    except (httpx.InvalidURL, TypeError) as exc:
        raise RefusedAddress(f"{url!r} is not a valid URL ({exc})") from exc
    schemes = ("https",) if require_https else ("http", "https")
    if parsed.scheme not in schemes:
        raise RefusedAddress(f"{url!r}: the scheme must be {' or '.join(schemes)}, not {parsed.scheme or 'none'!r}")
    if not parsed.host:
        raise RefusedAddress(f"{url!r} names no host")
    resolve_checked(parsed.host, parsed.port or DEFAULT_PORTS[parsed.scheme],
                    allowed_networks(allowed) if allowed is not None else None)
