"""Outbound HTTP that cannot reach inside: loopback, private, link-local, multicast, reserved.

Any URL that an editor or a payload supplies (feed sources, outbound webhooks) is fetched
through ``client()``, never plain ``httpx``. Two checks, because one is not enough:

- ``check_url(url)`` validates a URL when it is entered (admin forms, API input): scheme,
  then every address its host resolves to. That gives the editor a clear error at once.
- ``client()`` checks again on every connection, on the address actually connected to: its
  network backend resolves the host itself, refuses if any answer is a refused address and
  then connects to the checked address (the ``Host`` header and TLS SNI keep the name). A
  name that resolved to a public address when the form was saved and to 169.254.169.254 at
  fetch time (DNS rebinding) is refused there, and so is every redirect hop, since each
  hop opens its connection through the same backend.

Addresses are classified by the standard library's ``ipaddress`` properties (no parsing of
our own); an IPv4 address mapped into IPv6 is judged as the IPv4 address it carries.
``EGRESS_ALLOWED_NETWORKS`` (a Django setting: CIDRs) lets local development and the tests
reach a private range on purpose.
"""
from .addresses import RefusedAddress, allowed_networks, check_url, refusal, resolve_checked
from .transport import GuardedBackend, GuardedTransport, client

__all__ = ["GuardedBackend", "GuardedTransport", "RefusedAddress", "allowed_networks", "check_url", "client",
           "refusal", "resolve_checked"]
