"""The model is asked before the drafting transaction opens, and its answer is used only if it is still current.

A model may take minutes (3 attempts of DRAFTING_MODEL_TIMEOUT); asked inside the transaction it held the
digest's row locks on PostgreSQL and SQLite's single write lock for as long. A real local server answers.
"""
import datetime
import json
import threading

import pytest
from django.db import connection, connections, transaction
from django.db.utils import OperationalError
from werkzeug import Response

from digests.factories import ReferenceFactory
from digests.models import Digest, Reference, Repository
from ingestion import drafting_model
from ingestion.drafting import draft_digest
from ingestion.models import DigestDraft

from .drafting_day import DAY, GOOD, good, make_day
from .model_server import CHAT, answer, chat_requests, completion, model_server, waits  # noqa: F401


@pytest.fixture
def in_atomic(monkeypatch) -> list[bool]:
    """Whether a transaction was open each time the model was asked."""
    seen: list[bool] = []
    complete = drafting_model.complete

    def recording(*args, **kwargs):
        seen.append(connection.in_atomic_block)
        return complete(*args, **kwargs)

    monkeypatch.setattr(drafting_model, "complete", recording)
    return seen


def a_later_change(topic) -> None:
    ReferenceFactory(repository=Repository.objects.get(full_name="pytorch/pytorch"), number=102, key="102",
                     merged_at=datetime.datetime.combine(DAY, datetime.time(18), tzinfo=datetime.UTC),
                     title="Speed up conv2d on MPS", body="")


@pytest.mark.django_db(transaction=True)  # a test in a transaction would always be in_atomic_block
def test_no_transaction_is_open_while_the_model_writes_a_new_or_a_refreshed_draft(model_server, in_atomic):
    topic = make_day()
    answer(model_server, GOOD)
    answer(model_server, good(headline="PyTorch doubles matmul speed on MPS; Vision fixes resize"))
    first = draft_digest(topic, DAY)
    a_later_change(topic)
    second = draft_digest(topic, DAY)
    assert in_atomic == [False, False]
    assert (first.created, first.written.writer) == (True, DigestDraft.Writer.MODEL)
    assert second.written.writer == DigestDraft.Writer.MODEL and len(second.added) == 1
    assert Digest.objects.get().headline == "PyTorch doubles matmul speed on MPS; Vision fixes resize"


@pytest.mark.django_db(transaction=True)
def test_while_the_model_writes_the_digest_row_can_be_locked_by_another_connection(model_server):
    if connection.vendor != "postgresql":
        pytest.skip("row locks are PostgreSQL's; SQLite's in-memory test database is not shared with the "
                    "server's thread (the in_atomic_block test covers SQLite)")
    topic = make_day()
    model_server.expect_ordered_request(CHAT, method="POST").respond_with_json(completion(GOOD))
    draft_digest(topic, DAY)
    a_later_change(topic)
    digest_id, locked = Digest.objects.get().pk, []

    def handler(request):
        def lock():  # another connection, as an editor's save in the admin
            try:
                with transaction.atomic():
                    locked.append(Digest.objects.select_for_update(nowait=True).filter(pk=digest_id).exists())
            except OperationalError as exc:
                locked.append(str(exc))
            finally:
                connections.close_all()
        thread = threading.Thread(target=lock)
        thread.start()
        thread.join(10)
        return Response(json.dumps(completion(GOOD)), content_type="application/json")

    model_server.expect_ordered_request(CHAT, method="POST").respond_with_handler(handler)
    result = draft_digest(topic, DAY)
    assert locked == [True]
    assert result.written.writer == DigestDraft.Writer.MODEL and len(result.added) == 1


@pytest.mark.django_db
def test_an_answer_to_citations_changed_meanwhile_is_not_used(model_server, monkeypatch):
    topic = make_day()
    answer(model_server, GOOD)
    complete = drafting_model.complete

    def and_meanwhile(*args, **kwargs):
        answered = complete(*args, **kwargs)
        Reference.objects.filter(number=101).update(title="Fix two typos in docs")  # ingestion, while it wrote
        return answered

    monkeypatch.setattr(drafting_model, "complete", and_meanwhile)
    result = draft_digest(topic, DAY)
    record = DigestDraft.objects.get(digest=result.digest)
    assert len(chat_requests(model_server)) == 1
    assert record.writer == DigestDraft.Writer.FALLBACK and record.request_hash == ""
    assert record.writer_reason == ("the digest's citations changed while the model was writing; "
                                    "the next run asks it again")
    assert result.digest.summary.startswith("pytorch/pytorch ")  # the rule-based writer's
