"""An httpx client whose every connection goes to a checked address (so DNS rebinding fails)."""
from collections.abc import Iterable

import httpcore
import httpx

from .addresses import RefusedAddress, allowed_networks, resolve_checked

REFUSED_OPTIONS = ("transport", "mounts", "proxy", "trust_env")


class GuardedBackend(httpcore.NetworkBackend):
    """httpcore's sync backend, but it resolves the host itself and connects only to checked addresses.

    httpcore passes the origin's host here and uses it, not the address, for TLS SNI and
    certificate checks, and httpx sends it as ``Host``: connecting to the checked IP literal
    changes nothing else about the request.
    """

    def __init__(self, allowed: Iterable[str] | None = None):
        self._allowed = allowed
        self._inner = httpcore.SyncBackend()

    def connect_tcp(self, host, port, timeout=None, local_address=None, socket_options=None):
        addresses = resolve_checked(host, port, allowed_networks(self._allowed))
        failure = None
        for address in addresses:
            try:
                return self._inner.connect_tcp(str(address), port, timeout, local_address, socket_options)
            except httpcore.ConnectError as exc:
                failure = exc
        raise failure

    def connect_unix_socket(self, path, timeout=None, socket_options=None):
        raise RefusedAddress(f"unix socket {path!r}: outbound requests use TCP only")

    def sleep(self, seconds: float) -> None:
        self._inner.sleep(seconds)


class GuardedTransport(httpx.HTTPTransport):
    """httpx's transport on a GuardedBackend (no proxy, no unix socket: both would skip the check)."""

    def __init__(self, *, allowed: Iterable[str] | None = None, **kwargs):
        super().__init__(**kwargs)
        # httpx has no argument for httpcore's network_backend; the pool reads it per connection.
        self._pool._network_backend = GuardedBackend(allowed)


def client(*, allowed: Iterable[str] | None = None, **httpx_kwargs) -> httpx.Client:
    """An ``httpx.Client`` that refuses (RefusedAddress) to connect anywhere ``check_url`` would refuse.

    Takes httpx.Client's arguments, and ``verify``/``http2``/``limits``/``retries`` for its
    transport. Environment proxies are ignored (``trust_env=False``): a proxy would connect
    on our behalf to an address we never checked.
    """
    for name in REFUSED_OPTIONS:
        if name in httpx_kwargs:
            raise TypeError(f"egress.client() does not take {name!r}: it would bypass the address check")
    transport_options = {name: httpx_kwargs.pop(name) for name in ("verify", "http2", "limits", "retries", "cert")
                         if name in httpx_kwargs}
    return httpx.Client(transport=GuardedTransport(allowed=allowed, **transport_options), trust_env=False,
                        **httpx_kwargs)
