"""Asking the model server: our retry policy, failures falling back to the rule-based writer, the request.

A real local server (pytest-httpserver) answers; the retry waits are recorded, not slept.
"""
import time

import pytest

from ingestion import drafting_model
from ingestion.drafting import draft_digest
from ingestion.models import DigestDraft

from .drafting_day import DAY, GOOD, make_day
from .model_server import CHAT, MODEL, answer, chat_requests, completion, model_server, waits  # noqa: F401

pytestmark = pytest.mark.django_db


def drafted(topic):
    result = draft_digest(topic, DAY)
    return result, DigestDraft.objects.get(digest=result.digest)


def fail(server, status: int, times: int = 1, headers: dict | None = None):
    for _ in range(times):
        server.expect_ordered_request(CHAT, method="POST").respond_with_json(
            {"error": {"message": "busy", "type": "server_error"}}, status=status, headers=headers)


def test_unset_nothing_calls_out_and_the_rule_based_writer_writes(httpserver, settings):
    settings.DRAFTING_MODEL_URL = ""
    result, record = drafted(make_day())
    assert httpserver.log == []
    assert (record.writer, record.writer_reason) == (DigestDraft.Writer.RULES, "DRAFTING_MODEL_URL is not set")
    assert result.digest.summary.startswith("pytorch/pytorch ")  # today's writer


def test_429_then_200_waits_as_retry_after_says(model_server, waits):
    fail(model_server, 429, headers={"Retry-After": "7"})
    answer(model_server, GOOD)
    result, record = drafted(make_day())
    assert waits == [7.0] and len(chat_requests(model_server)) == 2
    assert record.writer == DigestDraft.Writer.MODEL and result.digest.headline == GOOD["headline"]


def test_500_three_times_falls_back_to_the_rule_based_writer_with_the_reason(model_server, waits):
    fail(model_server, 500, times=3)
    result, record = drafted(make_day())
    assert len(chat_requests(model_server)) == 3 and waits == [2.0, 4.0]  # backoff, 3 attempts at most
    assert record.writer == DigestDraft.Writer.FALLBACK
    assert record.writer_reason == "the model failed: no usable answer in 3 attempts: HTTP 500; HTTP 500; HTTP 500"
    assert result.digest.summary.startswith("pytorch/pytorch ")
    assert "Written by the rule-based writer: the model failed" in result.summary()
    assert list(DigestDraft.objects.fell_back()) == [record]


def test_a_timeout_is_retried_then_falls_back(model_server, settings):
    settings.DRAFTING_MODEL_TIMEOUT = 0.3
    for _ in range(3):
        model_server.expect_ordered_request(CHAT, method="POST").respond_with_handler(
            lambda request: time.sleep(0.6))
    _result, record = drafted(make_day())
    assert record.writer_reason == "the model failed: no usable answer in 3 attempts: timed out; timed out; timed out"
    while len(model_server.log) < 3:  # the server answers the last request after we gave up on it
        time.sleep(0.1)


@pytest.mark.parametrize("content, kwargs, reason", [
    ("{\"headline\": \"PyTorch", {}, "the answer is not JSON (Unterminated string starting at: line 1 column 14 "
                                     "(char 13))"),
    (GOOD, {"finish_reason": "length"}, "the answer was cut off (finish_reason: length)"),
    ("[1, 2]", {}, "the answer is not a JSON object"),
    ({"headline": "Only a headline"}, {}, "the answer does not follow the contract: summary: Field required"),
])
def test_a_malformed_or_truncated_answer_is_a_failed_attempt(model_server, content, kwargs, reason):
    for _ in range(3):
        answer(model_server, content, **kwargs)
    _result, record = drafted(make_day())
    assert len(chat_requests(model_server)) == 3
    assert record.writer == DigestDraft.Writer.FALLBACK and record.writer_reason.endswith(f"{reason}; {reason}")


def test_a_malformed_answer_then_a_good_one_is_used(model_server):
    answer(model_server, "not json at all")
    answer(model_server, GOOD)
    _result, record = drafted(make_day())
    assert record.writer == DigestDraft.Writer.MODEL


def test_a_refusal_is_not_asked_again(model_server):
    answer(model_server, "", refusal="I can't help with that.")
    _result, record = drafted(make_day())
    assert len(chat_requests(model_server)) == 1
    assert record.writer_reason == "the model failed: the model refused: I can't help with that."


def test_a_server_without_structured_output_is_asked_for_a_json_object(model_server):
    model_server.expect_ordered_request(CHAT, method="POST").respond_with_json(
        {"error": {"message": "response_format json_schema is not supported"}}, status=400)
    answer(model_server, GOOD)
    _result, record = drafted(make_day())
    formats = [request["response_format"]["type"] for request in chat_requests(model_server)]
    assert formats == ["json_schema", "json_object"] and record.writer == DigestDraft.Writer.MODEL


def test_another_4xx_is_not_retried(model_server):
    fail(model_server, 401)
    _result, record = drafted(make_day())
    assert len(chat_requests(model_server)) == 1 and record.writer_reason.startswith(
        "the model failed: the server answered 401")


def test_without_a_key_no_authorization_header_is_sent(model_server, settings, monkeypatch):
    settings.DRAFTING_MODEL_API_KEY = ""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-the-environment")
    answer(model_server, GOOD)
    drafted(make_day())
    request, _ = model_server.log[0]
    assert "Authorization" not in request.headers and request.get_json()["model"] == MODEL


def test_the_model_url_goes_through_egress(model_server, settings):
    settings.EGRESS_ALLOWED_NETWORKS = []  # a local model server needs them allowed
    _result, record = drafted(make_day())
    assert model_server.log == [] and record.writer == DigestDraft.Writer.FALLBACK
    assert record.writer_reason.startswith("the model failed: the model's address is refused: 'localhost' resolves "
                                           "to 127.0.0.1, which is a loopback address")


def test_a_connection_error_is_retried(settings, waits, db):
    settings.DRAFTING_MODEL_URL, settings.DRAFTING_MODEL = "http://127.0.0.1:9/v1", MODEL  # discard port: closed
    _result, record = drafted(make_day())
    assert record.writer_reason.count("connection failed") == 3 and waits == [2.0, 4.0]


def test_usage_and_the_raw_answer_are_recorded(model_server):
    answer(model_server, GOOD, usage=(321, 123))
    _result, record = drafted(make_day())
    assert (record.input_tokens, record.output_tokens) == (321, 123)
    assert record.raw_response == completion(GOOD)["choices"][0]["message"]["content"]
    assert record.request_hash and record.prompt_version == "1"


def test_the_retry_after_wait_is_capped(model_server, waits):
    fail(model_server, 503, headers={"Retry-After": "86400"})
    answer(model_server, GOOD)
    drafted(make_day())
    assert waits == [drafting_model.RETRY_AFTER_MAX]
