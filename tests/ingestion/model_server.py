"""A local OpenAI-compatible Chat Completions server for the drafting tests (pytest-httpserver).

It answers with recorded responses: the seed days' (tests/fixtures/drafting/, written by us
to match the published seed digests) or ones a test writes. ``model_server`` points the
settings at it and records the retry waits instead of sleeping them.
"""
import json
from pathlib import Path

import pytest

from ingestion import drafting_model

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "drafting"
CHAT = "/v1/chat/completions"
MODEL, KEY = "wire-writer-7b", "sk-test-not-a-real-key"


def recorded(name: str) -> dict:
    return json.loads((FIXTURES / name).read_text())


def completion(content, *, finish_reason: str = "stop", refusal: str | None = None,
               usage: tuple[int, int] = (1800, 600)) -> dict:
    """A chat completion as the server sends it; ``content`` a dict (sent as JSON text) or a string."""
    text = json.dumps(content) if isinstance(content, dict) else content
    return {"id": "chatcmpl-1", "object": "chat.completion", "created": 1780000000, "model": MODEL,
            "choices": [{"index": 0, "finish_reason": finish_reason,
                         "message": {"role": "assistant", "content": None if refusal else text, "refusal": refusal}}],
            "usage": {"prompt_tokens": usage[0], "completion_tokens": usage[1], "total_tokens": sum(usage)}}


@pytest.fixture
def waits(monkeypatch) -> list[float]:
    """The seconds the retry policy would have slept, in order."""
    slept: list[float] = []
    monkeypatch.setattr(drafting_model, "sleep", slept.append)
    return slept


@pytest.fixture
def model_server(httpserver, settings, waits):
    settings.DRAFTING_MODEL_URL = httpserver.url_for("/v1")
    settings.DRAFTING_MODEL = MODEL
    settings.DRAFTING_MODEL_API_KEY = KEY
    return httpserver


def answer(server, content, **kwargs) -> None:
    """The next request gets this completion."""
    server.expect_ordered_request(CHAT, method="POST").respond_with_json(completion(content, **kwargs))


def chat_requests(server) -> list[dict]:
    return [request.get_json() for request, _response in server.log if request.path == CHAT]
