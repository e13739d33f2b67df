"""Purge backends behind one interface: ``backend().purge(keys)`` and ``backend().purge_urls(paths)``.

Chosen by ``EDGE_PURGE_BACKEND``:

- ``varnish``: to every node of ``EDGE_VARNISH_URLS``, ``PURGE /`` with
  ``xkey-purge: <keys>`` (the VCL runs ``xkey.purge``), or ``PURGE <path>`` for
  one page. 200 is success; anything else, or no answer, is a failure.
- ``fastly``: ``POST {api}/service/{id}/purge`` with ``Surrogate-Key: <keys>`` and
  ``Fastly-Key`` (Fastly's batch surrogate-key purge, at most 256 keys a call;
  ``Fastly-Soft-Purge: 1`` with ``EDGE_FASTLY_SOFT_PURGE``); a page is
  ``POST {api}/purge/{host}{path}``.
- ``cloudflare``: ``POST {api}/client/v4/zones/{zone}/purge_cache`` with
  ``{"tags": [...]}`` (cache tags, ``EDGE_CLOUDFLARE_TAGS_PER_CALL`` a call) or
  ``{"files": [...]}`` and ``Authorization: Bearer``.
- ``none``: purges nothing.

Each purge returns the targets that failed (Varnish nodes, or the service):
the Celery task retries only those.
"""
import logging
from urllib.parse import urlsplit

import httpx
from django.conf import settings

logger = logging.getLogger(__name__)

FASTLY_KEYS_PER_CALL = 256
#: Keys per Varnish request: keeps the xkey-purge header well under Varnish's 8 KB limit.
VARNISH_KEYS_PER_CALL = 200


def batches(items: list[str], size: int):
    for start in range(0, len(items), size):
        yield items[start : start + size]


class Backend:
    """Purges nothing; the others override ``send``."""

    targets: tuple[str, ...] = ()

    def purge(self, keys, targets=None) -> list[str]:
        """Purge these surrogate keys; returns the targets that failed."""
        return self.each(targets, lambda client, target: self.send_keys(client, target, sorted(set(keys))))

    def purge_urls(self, paths, targets=None) -> list[str]:
        """Purge these pages (paths like ``/posts/x/``); returns the targets that failed."""
        return self.each(targets, lambda client, target: self.send_urls(client, target, list(paths)))

    def each(self, targets, action) -> list[str]:
        failed = []
        with httpx.Client(timeout=settings.EDGE_PURGE_TIMEOUT) as client:
            for target in targets or self.targets:
                try:
                    action(client, target)
                except (httpx.HTTPError, PurgeRefused) as error:
                    logger.warning("Edge purge failed at %s: %s", target, error)
                    failed.append(target)
        return failed

    def send_keys(self, client, target, keys) -> None:
        pass

    def send_urls(self, client, target, paths) -> None:
        pass


class PurgeRefused(Exception):
    """The edge answered, but not with success."""


def expect(response: httpx.Response, *codes: int) -> None:
    if response.status_code not in (codes or (200,)):
        raise PurgeRefused(f"{response.request.method} {response.request.url} answered {response.status_code}")


class Varnish(Backend):
    def __init__(self):
        self.targets = tuple(url.rstrip("/") for url in settings.EDGE_VARNISH_URLS)

    def send_keys(self, client, target, keys) -> None:
        for batch in batches(keys, VARNISH_KEYS_PER_CALL):
            expect(client.request("PURGE", f"{target}/", headers={"xkey-purge": " ".join(batch)}))

    def send_urls(self, client, target, paths) -> None:
        for path in paths:
            expect(client.request("PURGE", f"{target}{path}"))


class Fastly(Backend):
    targets = ("fastly",)

    def headers(self) -> dict[str, str]:
        headers = {"Fastly-Key": settings.EDGE_FASTLY_API_TOKEN, "Accept": "application/json"}
        if settings.EDGE_FASTLY_SOFT_PURGE:
            headers["Fastly-Soft-Purge"] = "1"
        return headers

    def send_keys(self, client, target, keys) -> None:
        url = f"{settings.EDGE_FASTLY_API_URL}/service/{settings.EDGE_FASTLY_SERVICE_ID}/purge"
        for batch in batches(keys, FASTLY_KEYS_PER_CALL):
            expect(client.post(url, headers={**self.headers(), "Surrogate-Key": " ".join(batch)}))

    def send_urls(self, client, target, paths) -> None:
        host = urlsplit(settings.SITE_URL).netloc
        for path in paths:
            expect(client.post(f"{settings.EDGE_FASTLY_API_URL}/purge/{host}{path}", headers=self.headers()))


class Cloudflare(Backend):
    targets = ("cloudflare",)

    def post(self, client, body: dict) -> None:
        url = f"{settings.EDGE_CLOUDFLARE_API_URL}/client/v4/zones/{settings.EDGE_CLOUDFLARE_ZONE_ID}/purge_cache"
        token = settings.EDGE_CLOUDFLARE_API_TOKEN
        response = client.post(url, json=body, headers={"Authorization": f"Bearer {token}"})
        expect(response)
        if not response.json().get("success"):
            raise PurgeRefused(f"Cloudflare refused the purge: {response.text[:200]}")

    def send_keys(self, client, target, keys) -> None:
        for batch in batches(keys, settings.EDGE_CLOUDFLARE_TAGS_PER_CALL):
            self.post(client, {"tags": batch})

    def send_urls(self, client, target, paths) -> None:
        files = [f"{settings.SITE_URL}{path}" for path in paths]
        for batch in batches(files, settings.EDGE_CLOUDFLARE_TAGS_PER_CALL):
            self.post(client, {"files": batch})


BACKENDS = {"none": Backend, "varnish": Varnish, "fastly": Fastly, "cloudflare": Cloudflare}


def backend() -> Backend:
    """The configured backend (an unknown name is a configuration error: it raises KeyError)."""
    return BACKENDS[settings.EDGE_PURGE_BACKEND]()
