"""GitHub as the fault tests meet it: it sends signed deliveries, records every attempt, and redelivers on request.

``FakeGitHub`` speaks the documented contract of the hook-deliveries REST API
on a pytest-httpserver:

- ``GET /repos/{owner}/{repo}/hooks/{hook_id}/deliveries``: attempts newest
  first (``id``, ``guid``, ``delivered_at``, ``redelivery``, ``status``,
  ``status_code``, ``event``, ``action``), ``per_page`` honoured up to
  ``page_size``, further pages by an opaque ``cursor`` in ``Link: rel="next"``;
- ``POST .../deliveries/{delivery_id}/attempts``: 202, then the delivery is
  sent again, same GUID and body, as a new attempt with ``redelivery: true``.

Every attempt's answer is recorded as GitHub would (``status_code`` 0 when
nothing answered), so a test can say which deliveries GitHub saw fail.
"""
import hashlib
import hmac
import itertools
import json
import logging
import queue
import re
import threading
from dataclasses import dataclass, field
from datetime import datetime, timezone
from urllib.parse import urlencode

import httpx
from werkzeug import Request, Response

logging.getLogger("httpx").setLevel(logging.WARNING)  # one line per delivery would bury the test's report


def sign(body: bytes, secret: str) -> str:
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


@dataclass
class Attempt:
    id: int
    guid: str
    event: str
    action: str
    body: bytes
    redelivery: bool
    status_code: int = 0
    delivered_at: str = field(default_factory=lambda: datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"))

    def as_json(self) -> dict:
        status = "OK" if 200 <= self.status_code < 300 else (
            f"Invalid HTTP Response: {self.status_code}" if self.status_code else "failed to connect to host")
        return {"id": self.id, "guid": self.guid, "delivered_at": self.delivered_at, "redelivery": self.redelivery,
                "duration": 0.05, "status": status, "status_code": self.status_code, "event": self.event,
                "action": self.action or None, "installation_id": None, "repository_id": 1296269}


class FakeGitHub:
    def __init__(self, httpserver, *, repo: str, hook_id: int, target: str, secret: str, page_size: int = 100,
                 timeout: float = 10.0, hold_redeliveries: bool = False):
        """``hold_redeliveries``: resend only while a test waits in ``wait_for_redeliveries``.

        On SQLite the test thread and ``live_server``'s share one connection, so a
        redelivery processed while the test is still writing would interleave two
        transactions on it; holding them models GitHub's delay and keeps the
        threads apart. With PostgreSQL, redeliveries go out at once.
        """
        self.server, self.repo, self.hook_id = httpserver, repo, hook_id
        self.hold_redeliveries = hold_redeliveries
        self._released = threading.Event()
        if not hold_redeliveries:
            self._released.set()
        self.target, self.secret, self.page_size, self.timeout = target, secret, page_size, timeout
        self.attempts: list[Attempt] = []
        self.redelivery_requests: list[int] = []
        self.rate_limited_once = False
        self._ids = itertools.count(1_000_000)
        self._lock = threading.Lock()
        self._resends: queue.Queue = queue.Queue()
        threading.Thread(target=self._resender, daemon=True).start()
        self.http = httpx.Client(timeout=timeout)
        base = f"/repos/{repo}/hooks/{hook_id}/deliveries"
        httpserver.expect_request(base, method="GET").respond_with_handler(self._list)
        httpserver.expect_request(re.compile(rf"^{re.escape(base)}/\d+/attempts$"),
                                  method="POST").respond_with_handler(self._redeliver)

    # --- sending, as GitHub does ---
    def send(self, event: str, body: bytes, guid: str, *, redelivery: bool = False) -> Attempt:
        payload = json.loads(body)
        attempt = Attempt(next(self._ids), guid, event, str(payload.get("action") or ""), body, redelivery)
        headers = {"X-GitHub-Event": event, "X-GitHub-Delivery": guid, "X-GitHub-Hook-ID": str(self.hook_id),
                   "X-Hub-Signature-256": sign(body, self.secret), "Content-Type": "application/json",
                   "User-Agent": "GitHub-Hookshot/fake", "X-Forwarded-Proto": "https"}  # as behind the edge
        try:
            attempt.status_code = self.http.post(self.target, content=body, headers=headers).status_code
        except httpx.HTTPError:
            attempt.status_code = 0  # GitHub: "failed to connect" or timed out
        with self._lock:
            self.attempts.append(attempt)
        return attempt

    def failed_guids(self) -> set[str]:
        """GUIDs no attempt of which got a 2xx."""
        through = {a.guid for a in self.attempts if 200 <= a.status_code < 300}
        return {a.guid for a in self.attempts} - through

    def wait_for_redeliveries(self) -> None:
        self._released.set()
        self._resends.join()
        if self.hold_redeliveries:
            self._released.clear()

    def _resender(self) -> None:
        """Redeliveries go out one after another, a moment after the request was answered, as GitHub's do."""
        while True:
            original = self._resends.get()
            self._released.wait()
            try:
                self.send(original.event, original.body, original.guid, redelivery=True)
            finally:
                self._resends.task_done()

    # --- the REST API ---
    def _list(self, request: Request) -> Response:
        if self.rate_limited_once:
            self.rate_limited_once = False
            return Response(json.dumps({"message": "API rate limit exceeded"}), status=403,
                            headers={"X-RateLimit-Remaining": "0", "Retry-After": "7"}, content_type="application/json")
        per_page = min(int(request.args.get("per_page", 30)), self.page_size)
        with self._lock:
            newest_first = sorted(self.attempts, key=lambda a: a.id, reverse=True)
        cursor = request.args.get("cursor")
        start = next((i for i, a in enumerate(newest_first) if cursor and str(a.id) == cursor), 0)
        page = newest_first[start:start + per_page]
        headers = {}
        if start + per_page < len(newest_first):
            query = urlencode({"per_page": per_page, "cursor": newest_first[start + per_page].id})
            headers["Link"] = f'<{self.server.url_for(request.path)}?{query}>; rel="next"'
        return Response(json.dumps([a.as_json() for a in page]), headers=headers, content_type="application/json")

    def _redeliver(self, request: Request) -> Response:
        delivery_id = int(request.path.rstrip("/").split("/")[-2])
        original = next((a for a in self.attempts if a.id == delivery_id), None)
        if original is None:
            return Response(json.dumps({"message": "Not Found"}), status=404, content_type="application/json")
        self.redelivery_requests.append(delivery_id)
        self._resends.put(original)
        return Response(json.dumps({}), status=202, content_type="application/json")
