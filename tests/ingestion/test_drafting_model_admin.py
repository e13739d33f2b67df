"""Editors and the model's drafts in the admin: who wrote it, what was dropped and why, the cited references,
"Redraft with the model" (queued, never run inside the request)."""
import pytest
from django.urls import reverse

from digests.models import Digest
from ingestion.drafting import draft_digest
from ingestion.models import DigestDraft
from ingestion.tasks import draft_digest_task

from .drafting_day import DAY, GOOD, make_day, with_part
from .model_server import KEY, MODEL, answer, chat_requests, model_server, waits  # noqa: F401

pytestmark = pytest.mark.django_db
BAD = {"text": "Matmul <script>alert(1)</script> is 3x faster.", "cites": [1]}


@pytest.fixture(params=["editor", "publisher"])
def staff(request, client):
    client.force_login(request.getfixturevalue(request.param))
    return client


def test_the_change_page_shows_the_writer_the_dropped_parts_and_the_cited_references(staff, model_server):
    answer(model_server, with_part("body", BAD))
    digest = draft_digest(make_day(), DAY).digest
    page = staff.get(reverse("admin:digests_digest_change", args=[digest.pk])).content.decode()
    assert f"The language model <strong>{MODEL}</strong> (prompt version 1)" in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page and "<script>alert(1)" not in page
    assert "contains HTML" in page
    assert '[1] <a href="https://github.com/pytorch/pytorch/pull/100" rel="noopener" target="_blank">' \
           "[MPS] Tile matmul inputs</a> pytorch/pytorch" in page
    assert KEY not in page


def test_a_fallback_says_why(staff, model_server):
    for _ in range(3):
        model_server.expect_ordered_request("/v1/chat/completions").respond_with_json({}, status=503)
    digest = draft_digest(make_day(), DAY).digest
    page = staff.get(reverse("admin:digests_digest_change", args=[digest.pk])).content.decode()
    assert "The rule-based writer (the model&#x27;s draft failed)" in page
    assert "no usable answer in 3 attempts: HTTP 503; HTTP 503; HTTP 503" in page


def test_redraft_with_the_model_is_queued_and_uses_the_model(staff, model_server, settings, monkeypatch,
                                                             django_capture_on_commit_callbacks):
    settings.DRAFTING_MODEL_URL = ""
    digest = draft_digest(make_day(), DAY).digest  # the rule-based writer's
    settings.DRAFTING_MODEL_URL = model_server.url_for("/v1")
    answer(model_server, GOOD)
    sent = []
    monkeypatch.setattr(draft_digest_task, "delay", lambda *args: sent.append(args))
    changelist = reverse("admin:digests_digest_changelist")
    with django_capture_on_commit_callbacks(execute=True):
        response = staff.post(changelist, {"action": "redraft_with_model", "_selected_action": [digest.pk]})
    assert response.status_code == 302 and chat_requests(model_server) == []  # nothing asked inside the request
    assert sent == [(digest.topic_id, DAY.isoformat())]
    draft_digest_task.apply(args=sent[0])  # what the worker does with it
    assert DigestDraft.objects.get(digest=digest).writer == DigestDraft.Writer.MODEL
    assert Digest.objects.get(pk=digest.pk).headline == GOOD["headline"]


def test_redraft_without_a_model_says_so(staff, settings):
    settings.DRAFTING_MODEL_URL = ""
    digest = draft_digest(make_day(), DAY).digest
    response = staff.post(reverse("admin:digests_digest_changelist"),
                          {"action": "redraft_with_model", "_selected_action": [digest.pk]}, follow=True)
    assert "DRAFTING_MODEL_URL is not set" in response.content.decode()


def test_regenerating_inline_never_asks_the_model_in_the_request(staff, model_server,
                                                                 django_capture_on_commit_callbacks):
    answer(model_server, GOOD)
    digest = draft_digest(make_day(), DAY).digest
    with django_capture_on_commit_callbacks():
        staff.post(reverse("admin:digests_digest_changelist"),
                   {"action": "regenerate_digests", "_selected_action": [digest.pk]})
    assert len(chat_requests(model_server)) == 1  # the first draft's only
