"""A real local receiver (pytest-httpserver) that answers as a test scripts it, and endpoints pointing at it."""
import json

import pytest
from standardwebhooks import Webhook
from werkzeug.wrappers import Response

from outbound import outbox
from outbound.models import Endpoint


class Receiver:
    """Answers each POST with the next scripted status (then 204 for ever) and keeps what it got."""

    def __init__(self, httpserver):
        self.server = httpserver
        self.statuses: list[int] = []
        self.received = []  # (body bytes, headers dict, status answered)
        httpserver.expect_request("/hook", method="POST").respond_with_handler(self.handle)

    def handle(self, request):
        status = self.statuses.pop(0) if self.statuses else 204
        self.received.append((request.get_data(), dict(request.headers), status))
        return Response("gone" if status == 410 else "ok", status=status)

    @property
    def url(self) -> str:
        return self.server.url_for("/hook")

    def verified(self, secret: str) -> list[dict]:
        """Every 2xx-answered request, verified with the stock standardwebhooks verifier."""
        return [Webhook(secret).verify(body, headers) for body, headers, status in self.received
                if 200 <= status < 300]

    def types(self) -> list[str]:
        return [json.loads(body)["type"] for body, _, status in self.received if 200 <= status < 300]


@pytest.fixture
def receiver(httpserver):
    return Receiver(httpserver)


@pytest.fixture
def endpoint(db, receiver):
    return Endpoint.objects.create(url=receiver.url, description="test receiver")


@pytest.fixture
def queued(monkeypatch):
    """Record what would go to Celery instead of sending it: these tests drive delivery themselves."""
    calls = []
    monkeypatch.setattr("outbound.delivery.enqueue", lambda endpoint_id, countdown=None: calls.append(endpoint_id))
    return calls


@pytest.fixture(autouse=True)
def announce_in_process(request, monkeypatch):
    """Announce at the commit in this process, what the queued task does where tasks run inline: with
    REDIS_URL no worker reads the suite's queue. Modules that run a real worker set ``REAL_WORKER``."""
    if not getattr(request.module, "REAL_WORKER", False):
        monkeypatch.setattr(outbox, "queue", outbox.process)
