"""A small GitHub REST client that follows GitHub's rules for integrators.

- ``Link`` URLs are followed exactly as given (they may change host path, e.g.
  ``/repositories/{id}/``, or use cursors): never build page URLs ourselves.
- Conditional requests: ``If-None-Match`` with the stored ETag; 304 means
  nothing new (and does not count against the rate limit).
- Rate limits: on 403/429 wait ``Retry-After`` if given, else until
  ``X-RateLimit-Reset`` when ``X-RateLimit-Remaining`` is 0, else back off
  exponentially from a minute. 5xx and network errors are retried with backoff.
- Requests are made one at a time (callers hold one client per token; the
  Celery poll task holds a per-token lock).

``sleep`` and ``clock`` are injectable so tests can assert the computed waits
without waiting.
"""
import logging
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import httpx

logger = logging.getLogger(__name__)

API_VERSION = "2022-11-28"
SECONDARY_LIMIT_BACKOFF = 60  # seconds, doubled on each further limit
SERVER_ERROR_BACKOFF = 1  # seconds, doubled on each further error


class GitHubError(Exception):
    """GitHub answered with an error we cannot retry, or retries ran out."""


@dataclass
class Page:
    """One page of a list: its items, ETag and the ``next`` URL (None on the last page)."""

    items: list = field(default_factory=list)
    etag: str = ""
    next_url: str | None = None
    not_modified: bool = False


def _is_rate_limited(response: httpx.Response) -> bool:
    if response.status_code == 429:
        return True
    if response.status_code != 403:
        return False
    if "retry-after" in response.headers or response.headers.get("x-ratelimit-remaining") == "0":
        return True
    return any(word in response.text.lower() for word in ("rate limit", "abuse detection"))


def rate_limit_wait(response: httpx.Response, now: float, limited_before: int) -> float:
    """Seconds to wait after a rate-limited response, as GitHub documents.

    ``limited_before`` is how many rate-limit answers preceded this one in the
    same request, for the exponential fallback (60, 120, 240 … seconds).
    """
    retry_after = response.headers.get("retry-after")
    if retry_after and retry_after.strip().isdigit():
        return float(retry_after)
    reset = response.headers.get("x-ratelimit-reset")
    if response.headers.get("x-ratelimit-remaining") == "0" and reset and reset.isdigit():
        return max(float(reset) - now, 0.0) + 1.0
    return float(SECONDARY_LIMIT_BACKOFF * 2**limited_before)


class GitHubClient:
    """Requests against the REST API with retries, rate limits, ETags and pagination."""

    def __init__(self, base_url: str, token: str = "", *, sleep: Callable[[float], None] = time.sleep,
                 clock: Callable[[], float] = time.time, max_attempts: int = 6, timeout: float = 30.0):
        headers = {"Accept": "application/vnd.github+json", "X-GitHub-Api-Version": API_VERSION,
                   "User-Agent": "RepoJournal-ingestion"}
        if token:
            headers["Authorization"] = f"Bearer {token}"
        self.http = httpx.Client(base_url=base_url.rstrip("/"), headers=headers, timeout=timeout)
        self.sleep, self.clock, self.max_attempts = sleep, clock, max_attempts

    def close(self) -> None:
        self.http.close()

    def get(self, url: str, *, params: dict | None = None, etag: str = "") -> httpx.Response:
        """GET with retries; returns a 2xx or 304 response, or raises GitHubError."""
        return self.request("GET", url, params=params, headers={"If-None-Match": etag} if etag else {})

    def post(self, url: str) -> httpx.Response:
        """POST without a body (e.g. a redelivery request), retried and rate-limited like a GET."""
        return self.request("POST", url)

    def request(self, method: str, url: str, *, params: dict | None = None,
                headers: dict | None = None) -> httpx.Response:
        """Send with retries; returns a 2xx or 304 response, or raises GitHubError."""
        limited = errors = 0
        for attempt in range(1, self.max_attempts + 1):
            try:
                response = self.http.request(method, url, params=params, headers=headers or {})
            except httpx.TransportError as exc:
                reason, wait = f"{type(exc).__name__}: {exc}", SERVER_ERROR_BACKOFF * 2**errors
                errors += 1
            else:
                if _is_rate_limited(response):
                    reason, wait = f"rate limited ({response.status_code})", rate_limit_wait(
                        response, self.clock(), limited)
                    limited += 1
                elif response.status_code >= 500:
                    reason, wait = f"server error {response.status_code}", SERVER_ERROR_BACKOFF * 2**errors
                    errors += 1
                elif response.status_code == 304 or response.is_success:
                    return response
                else:
                    raise GitHubError(f"{method} {url}: {response.status_code} {response.text[:200]}")
            if attempt < self.max_attempts:
                self._wait(wait, f"{method} {url}", reason)
        raise GitHubError(f"{method} {url}: gave up after {self.max_attempts} attempts ({reason})")

    def _wait(self, seconds: float, what: str, reason: str) -> None:
        logger.warning("GitHub %s: %s; waiting %.0f s", what, reason, seconds)
        self.sleep(seconds)

    def get_json(self, url: str, **params):
        return self.get(url, params=params or None).json()

    def pages(self, url: str, params: dict | None = None, etag: str = "") -> Iterator[Page]:
        """Walk a list from its first page, following ``Link: rel="next"`` URLs as opaque strings.

        The ETag applies to the first page only; a 304 there yields one
        ``not_modified`` page and stops.
        """
        response = self.get(url, params=params, etag=etag)
        while True:
            if response.status_code == 304:
                yield Page(etag=etag, not_modified=True)
                return
            next_url = response.links.get("next", {}).get("url")
            yield Page(items=response.json(), etag=response.headers.get("etag", ""), next_url=next_url)
            if not next_url:
                return
            response = self.get(next_url)
