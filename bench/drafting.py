"""The model writer's own time on a 50-, 200- and 500-change day (issue 36).

Why: drafting with a model spends most of its wall time waiting for the model, which
RepoJournal does not control; what it does control -- building the prompt, checking the
answer, saving the draft (citations, fields, the digest's rendered parts, DigestDraft) --
must not grow faster than the day does, or a busy day's draft becomes slow for reasons
of our own. So the model here is a local OpenAI-compatible server that answers at once.

How: for each size a new topic and day of ``size`` merged pull requests (bulk-created,
as ingestion would have stored them), drafted by ``draft_digest`` with ``DRAFTING_MODEL_URL``
pointing at the server, in-process (the command's path). The answer cites every change
once in the body (so the checks see every reference) and passes every check; the run
raises if the model writer did not write the draft. The writer's own time is the whole
draft minus the time inside the HTTP call (``drafting_model.complete``), the median of
``rounds`` fresh days. The days are deleted afterwards.
"""
import datetime
import json
import statistics
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from unittest import mock

from django.db import transaction
from django.test import override_settings

from digests.models import Digest, Reference, Repository, Topic
from ingestion import drafting_model
from ingestion.drafting import draft_digest
from ingestion.models import DigestDraft

SIZES = (50, 200, 500)
ROUNDS = 3
MODEL = "bench-writer"
FIRST_DAY = datetime.date(2031, 1, 1)
REPOSITORIES = 5


def answer(size: int) -> dict:
    """A passing answer for a day of ``size`` changes: every change cited once, no figures, no repository names."""
    return {
        "headline": "A busy day of merged pull requests",
        "summary": [{"text": "Many changes landed today.", "cites": [1]}],
        "body": [{"text": "This change landed and was reviewed.", "cites": [number]} for number in range(1, size + 1)],
        "action_items": [{"text": "Read the merged changes before upgrading.", "repository": "bench-drafting/repo-0",
                          "priority": "monitor", "cites": [1]}],
        "faq": [{"question": "What changed today?", "answer": "Many changes landed today.", "cites": [1]}],
    }


class ModelServer(ThreadingHTTPServer):
    """An OpenAI-compatible Chat Completions server on 127.0.0.1 that answers every request at once."""

    daemon_threads = True

    def __init__(self):
        super().__init__(("127.0.0.1", 0), _Handler)
        self.content = "{}"
        self.thread = threading.Thread(target=self.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/v1"

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.shutdown()
        self.server_close()


class _Handler(BaseHTTPRequestHandler):
    def do_POST(self):  # noqa: N802 (http.server's name)
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        body = json.dumps({
            "id": "chatcmpl-bench", "object": "chat.completion", "created": 0, "model": MODEL,
            "choices": [{"index": 0, "finish_reason": "stop",
                         "message": {"role": "assistant", "content": self.server.content}}],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
        }).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):  # quiet
        pass


def make_day(topic: Topic, day: datetime.date, size: int) -> None:
    """``size`` merged pull requests of ``topic`` on ``day`` across a few repositories, with descriptions."""
    repositories = [Repository.objects.get_or_create(full_name=f"bench-drafting/repo-{n}", defaults={"topic": topic})[0]
                    for n in range(REPOSITORIES)]
    at = datetime.datetime.combine(day, datetime.time(9), tzinfo=datetime.UTC)
    first = Reference.objects.filter(repository__in=repositories).count() + 1  # earlier days' numbers are taken
    Reference.objects.bulk_create(
        Reference(repository=repositories[n % REPOSITORIES], kind=Reference.Kind.PULL_REQUEST, key=str(first + n),
                  number=first + n, title=f"Make the scheduler handle case {first + n} without copying",
                  url=f"https://github.com/bench-drafting/repo-{n % REPOSITORIES}/pull/{first + n}", state="merged",
                  author_login=f"dev{n % 17}", merged_at=at + datetime.timedelta(seconds=n), labels=["perf"],
                  stats={"additions": 10 + n, "deletions": n % 7, "changed_files": 1 + n % 4},
                  body="The scheduler copied its queue on every tick; it now keeps one list and swaps it.\n\n"
                       "<!-- template: describe your change -->\n- [ ] I added tests\n" * 3)
        for n in range(size)
    )


def draft_once(server: ModelServer, topic: Topic, day: datetime.date, size: int) -> dict:
    """Draft one fresh day of ``size`` changes; the wall time, the time inside the HTTP call and the writer's rest."""
    make_day(topic, day, size)
    server.content = json.dumps(answer(size))
    waited: list[float] = []
    complete = drafting_model.complete

    def timed(*args, **kwargs):
        started = time.perf_counter()
        try:
            return complete(*args, **kwargs)
        finally:
            waited.append(time.perf_counter() - started)

    with mock.patch.object(drafting_model, "complete", timed):
        started = time.perf_counter()
        result = draft_digest(topic, day)
        total = time.perf_counter() - started
    draft = DigestDraft.objects.get(digest=result.digest)
    if draft.writer != DigestDraft.Writer.MODEL or draft.dropped:
        raise RuntimeError(f"the {size}-change day was not drafted by the model whole: {draft.writer_reason} "
                           f"{draft.dropped[:3]}")
    return {"total_ms": total * 1000, "model_ms": sum(waited) * 1000, "writer_ms": (total - sum(waited)) * 1000}


def cleanup(topic: Topic) -> None:
    with transaction.atomic():
        Digest.objects.filter(topic=topic).delete()  # its draft, citations, items and FAQ with it
        Reference.objects.filter(repository__topic=topic).delete()
        Repository.objects.filter(topic=topic).delete()
        topic.delete()


def measure(sizes=SIZES, rounds: int = ROUNDS) -> dict:
    """For each size, the median of ``rounds`` drafts: the writer's own time, in total and per change."""
    measured = []
    with ModelServer() as server, override_settings(
            DRAFTING_MODEL_URL=server.url, DRAFTING_MODEL=MODEL, DRAFTING_MODEL_API_KEY="",
            EGRESS_ALLOWED_NETWORKS=["127.0.0.0/8"]):
        topic = Topic.objects.create(name="Bench drafting", slug="bench-drafting")
        try:
            day = FIRST_DAY
            for size in sizes:
                runs = []
                for _ in range(max(1, rounds)):
                    runs.append(draft_once(server, topic, day, size))
                    day += datetime.timedelta(days=1)
                writer = statistics.median(run["writer_ms"] for run in runs)
                measured.append({"changes": size, "rounds": len(runs), "writer_ms": round(writer, 1),
                                 "writer_ms_per_change": round(writer / size, 2),
                                 "model_ms": round(statistics.median(run["model_ms"] for run in runs), 1),
                                 "total_ms": round(statistics.median(run["total_ms"] for run in runs), 1)})
        finally:
            cleanup(topic)
    return {"sizes": measured, "growth": growth(measured)}


def growth(measured: list[dict]) -> float | None:
    """The largest day's writer time per change over the smallest's: at most about 1 when it grows with the day."""
    if len(measured) < 2:
        return None
    return round(measured[-1]["writer_ms_per_change"] / measured[0]["writer_ms_per_change"], 2)


def checks(drafting: dict) -> list[dict]:
    """The issue's bar: the writer's own time does not grow faster than the day (per change: not above 1.5x)."""
    sizes = drafting["sizes"]
    if drafting["growth"] is None:
        return []
    return [{"check": f"model writer's own time per change, {sizes[-1]['changes']} vs {sizes[0]['changes']} changes",
             "value": drafting["growth"], "bar": "<= 1.5x", "ok": drafting["growth"] <= 1.5}]
