"""Asking an OpenAI-compatible Chat Completions server for a draft (docs/drafting.md).

The official ``openai`` client talks to any such server through its ``base_url``
(OpenAI, Azure OpenAI, vLLM, llama-server, Ollama, LM Studio, a LiteLLM proxy).
Its HTTP goes through ``egress`` like every other outbound request: the model's
URL is configured, not typed by a stranger, but a server on a private address
(the usual local model) should need ``EGRESS_ALLOWED_NETWORKS`` on purpose.

The client's own retries are off; ``complete`` retries here, so the policy is
ours and tested: at most ``ATTEMPTS`` requests a draft, after a 429 (honouring
``Retry-After``), a 5xx, a timeout, a connection error, or an answer that is
not a usable JSON object (malformed, or cut off: ``finish_reason: "length"``).
A refusal, or another 4xx, is not retried: asking again would get the same.
Never called inside a web request (the task and the command call it).
"""
import json
import time
from dataclasses import dataclass

import httpx
import httpx2
import openai
from django.conf import settings

import egress

ATTEMPTS = 3
BACKOFF = 2.0  # seconds before the second attempt, doubled after each failure
RETRY_AFTER_MAX = 60.0  # a longer Retry-After is waited only this long (the draft gives up sooner otherwise)
RETRIED_STATUS = {408, 409, 429}
sleep = time.sleep  # the tests record the waits instead of waiting


class ModelFailed(Exception):
    """The server gave no usable answer in ``ATTEMPTS`` attempts (or refused); the message says why."""


def configured() -> bool:
    return bool(settings.DRAFTING_MODEL_URL)


@dataclass
class Answer:
    """One usable answer: the JSON object it carried, and what it cost."""

    content: str
    data: dict
    input_tokens: int | None
    output_tokens: int | None
    attempts: int
    structured: bool  # False: the server refused json_schema and answered a json_object request


class EgressTransport(httpx2.BaseTransport):
    """An httpx2 transport (what ``openai`` speaks) that sends every request through ``egress.client()``.

    The openai client is built on httpx2, egress on httpx: this adapter copies the
    request across and the response back, so the address checks stay in one place.
    """

    def __init__(self):
        self._http = egress.client()

    def handle_request(self, request: httpx2.Request) -> httpx2.Response:
        timeout = request.extensions.get("timeout")
        outgoing = self._http.build_request(request.method, str(request.url), headers=list(request.headers.raw),
                                            content=request.read(),
                                            timeout=httpx.Timeout(**timeout) if timeout else httpx.USE_CLIENT_DEFAULT)
        try:
            response = self._http.send(outgoing)
        except httpx.TimeoutException as exc:
            raise httpx2.ReadTimeout(str(exc) or "timed out", request=request) from exc
        except (httpx.TransportError, egress.RefusedAddress) as exc:
            raise httpx2.ConnectError(str(exc) or type(exc).__name__, request=request) from exc
        return httpx2.Response(response.status_code, headers=list(response.headers.raw), content=response.content,
                               request=request)

    def close(self) -> None:
        self._http.close()


def client() -> openai.OpenAI:
    """The configured server's client: our egress transport, our timeout, no retries of its own."""
    key = settings.DRAFTING_MODEL_API_KEY
    return openai.OpenAI(
        base_url=settings.DRAFTING_MODEL_URL, api_key=key or "none",  # no key: no header (see _request)
        timeout=settings.DRAFTING_MODEL_TIMEOUT, max_retries=0,
        http_client=httpx2.Client(transport=EgressTransport(), timeout=settings.DRAFTING_MODEL_TIMEOUT),
    )


def _retry_after(exc: openai.APIStatusError) -> float | None:
    value = exc.response.headers.get("retry-after")
    try:
        return min(max(float(value), 0.0), RETRY_AFTER_MAX) if value is not None else None
    except ValueError:
        return None


def _answer(completion, attempt: int, structured: bool, validate) -> Answer:
    """The completion's JSON object, or ValueError saying why it is not usable."""
    choice = completion.choices[0] if completion.choices else None
    if choice is None:
        raise ValueError("the answer had no choices")
    if getattr(choice.message, "refusal", None):
        raise ModelFailed(f"the model refused: {choice.message.refusal}")
    if choice.finish_reason == "length":
        raise ValueError("the answer was cut off (finish_reason: length)")
    content = choice.message.content or ""
    try:
        data = json.loads(content)
    except json.JSONDecodeError as exc:
        raise ValueError(f"the answer is not JSON ({exc})") from exc
    if not isinstance(data, dict):
        raise ValueError("the answer is not a JSON object")
    if validate is not None:
        validate(data)  # ValueError: not the contract, a failed attempt like malformed JSON
    usage = completion.usage
    return Answer(content, data, usage.prompt_tokens if usage else None, usage.completion_tokens if usage else None,
                  attempt, structured)


def _refusal(exc: BaseException) -> str:
    """The egress refusal somewhere in ``exc``'s chain of causes, if any."""
    while exc is not None:
        if isinstance(exc, egress.RefusedAddress):
            return str(exc)
        exc = exc.__cause__ or exc.__context__
    return ""


def _request(api: openai.OpenAI, messages: list[dict], response_format: dict):
    no_key = {"Authorization": openai.Omit()}  # no key set: no Authorization header at all
    return api.chat.completions.create(model=settings.DRAFTING_MODEL, messages=messages,
                                       response_format=response_format, temperature=0,
                                       extra_headers=None if settings.DRAFTING_MODEL_API_KEY else no_key)


def complete(messages: list[dict], schema: dict, validate=None) -> Answer:
    """Ask for a JSON object following ``schema``, accepted if ``validate(data)`` raises no ValueError.

    ``ModelFailed`` after ``ATTEMPTS`` failed attempts, a refusal or a 4xx.
    """
    json_schema = {"type": "json_schema", "json_schema": {"name": "digest_draft", "schema": schema, "strict": True}}
    response_format, failures, delay = json_schema, [], BACKOFF
    with client() as api:
        for attempt in range(1, ATTEMPTS + 1):
            wait = delay
            try:
                try:
                    completion = _request(api, messages, response_format)
                except openai.BadRequestError:
                    if response_format is not json_schema:
                        raise
                    response_format = {"type": "json_object"}  # a server without structured output
                    completion = _request(api, messages, response_format)
                return _answer(completion, attempt, response_format is json_schema, validate)
            except openai.APIStatusError as exc:
                if exc.status_code < 500 and exc.status_code not in RETRIED_STATUS:
                    raise ModelFailed(f"the server answered {exc.status_code}: {exc.message}") from exc
                failures.append(f"HTTP {exc.status_code}")
                wait = _retry_after(exc) if _retry_after(exc) is not None else delay
            except openai.APITimeoutError:
                failures.append("timed out")
            except openai.APIConnectionError as exc:
                refused = _refusal(exc)
                if refused:  # the address is not allowed: asking again would be refused again
                    raise ModelFailed(f"the model's address is refused: {refused}") from exc
                failures.append(f"connection failed ({exc.__cause__ or exc})")
            except ValueError as exc:
                failures.append(str(exc))
            if attempt < ATTEMPTS:
                sleep(wait)
                delay *= 2
    raise ModelFailed(f"no usable answer in {ATTEMPTS} attempts: {'; '.join(failures)}")
