"""Helpers for the ingestion tests: signed webhook posts and tracked repositories."""
import hashlib
import hmac
import json
import uuid

import pytest

from digests.factories import RepositoryFactory, TopicFactory
from ingestion.models import TrackedRepository
from tests.fixtures import WEBHOOK_PAYLOADS as WEBHOOKS
SECRET = "It's a Secret to Everybody"
HELLO_WORLD = "Codertocat/Hello-World"


def fixture_body(name: str) -> bytes:
    """The exact bytes of a vendored webhook payload (e.g. "pull_request.opened")."""
    return (WEBHOOKS / f"{name}.payload.json").read_bytes()


def fixture_payload(name: str) -> dict:
    return json.loads(fixture_body(name))


def sign(body: bytes, secret: str = SECRET) -> str:
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


@pytest.fixture
def webhook_secret(settings):
    settings.GITHUB_WEBHOOK_SECRET = SECRET
    return SECRET


@pytest.fixture
def post_webhook(client, webhook_secret):
    """POST a delivery to /webhooks/github, signed unless ``signature`` is given ("" for none)."""

    def post(event: str, body: bytes | dict, *, guid: str | None = None, signature: str | None = None,
             content_type: str = "application/json"):
        raw = json.dumps(body).encode() if isinstance(body, dict) else body
        headers = {"X-GitHub-Event": event, "X-GitHub-Delivery": guid or str(uuid.uuid4())}
        signature = sign(raw) if signature is None else signature
        if signature:
            headers["X-Hub-Signature-256"] = signature
        return client.post("/webhooks/github", data=raw, content_type=content_type, headers=headers)

    return post


@pytest.fixture
def tracked(db):
    """Codertocat/Hello-World, the repository of every shared webhook payload, tracked."""
    topic = TopicFactory(name="Hello", slug="hello")
    repository = RepositoryFactory(full_name=HELLO_WORLD, topic=topic)
    return TrackedRepository.objects.create(repository=repository)
