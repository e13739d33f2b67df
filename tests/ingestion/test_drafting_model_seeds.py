"""The seed days drafted by a model: a local server answers what the published seed digest says.

The seed text does not give the pull requests' descriptions, so the ones the
published digests quote (figures such as "1.6x speedup on 384x384 matrices")
are written into the delivered references (tests/fixtures/drafting/descriptions.json).
After drafting, the stored draft carries every element of the published seed digest.
"""
import json
import re

import pytest
from django.core.management import call_command

from digests.models import Digest, Reference
from ingestion.drafting import draft_digest
from ingestion.drafting_changes import clean_title
from ingestion.drafting_text import md_unescape
from ingestion.models import DigestDraft

from .model_server import CHAT, KEY, MODEL, answer, chat_requests, model_server, recorded, waits  # noqa: F401
from .seed_days import SEEDS, deliver_seed_day, seed_digest

pytestmark = pytest.mark.django_db
RECORDED = {"000_8ef3954005822ae7.txt": "seed_000.json", "001_54368d6fe217c462.txt": "seed_001.json"}
CITATIONS = re.compile(r"\s*\[(?:ref:)?\d+\]")


def plain(text: str) -> str:
    """Markdown or seed text without citations, escapes and spaces before punctuation, for comparing."""
    text = CITATIONS.sub("", md_unescape(text))
    return re.sub(r"\s+([.,;:])", r"\1", " ".join(text.split()))


def sentences(text: str) -> list[str]:
    return [s for s in re.split(r"(?<=[.!?])\s+(?=[A-Z])", plain(text)) if s]


def describe(topic) -> None:
    for title, body in recorded("descriptions.json").items():
        for reference in Reference.objects.filter(repository__topic=topic, kind=Reference.Kind.PULL_REQUEST):
            if clean_title(reference.title) == title:
                reference.body = body
                reference.save()


@pytest.fixture(params=SEEDS)
def seed_day(request, post_webhook):
    seed = seed_digest(request.param)
    topic = deliver_seed_day(post_webhook, seed)
    describe(topic)
    return seed, topic, recorded(RECORDED[request.param])


def test_the_stored_draft_carries_every_element_of_the_published_seed(seed_day, model_server):
    seed, topic, response = seed_day
    answer(model_server, response)
    result = draft_digest(topic, seed.date)
    digest = Digest.objects.get(pk=result.digest.pk)
    record = DigestDraft.objects.get(digest=digest)
    assert (record.writer, record.dropped) == (DigestDraft.Writer.MODEL, [])
    assert digest.headline.upper() == seed.headline
    assert plain(digest.summary) == plain(seed.summary)
    assert set(CITATIONS.findall(digest.summary)) and "[ref:" not in digest.summary
    for sentence in sentences(seed.body):
        assert sentence in plain(digest.body)
    assert "Also merged" not in digest.body  # every change is cited
    items = [(item.text, item.repository.full_name, item.priority) for item in digest.action_items.all()]
    assert items == seed.action_items
    faq = [(entry.question, plain(entry.answer)) for entry in digest.faq_entries.all()]
    assert faq == [(question, plain(answer)) for question, answer in seed.faq]
    assert digest.citation_report().missing == []


def test_citations_only_in_cites_are_placed_at_the_end_of_the_sentence(seed_day, model_server):
    seed, topic, response = seed_day
    answer(model_server, response)
    digest = draft_digest(topic, seed.date).digest
    if seed.date.day == 29:
        assert "Ignite picked up CharacterErrorRate metric for ASR and OCR evaluation [9]." in digest.body
    else:
        assert digest.summary.endswith("for CPU\\-offloaded activations [5][6].") or digest.summary.endswith(
            "for CPU-offloaded activations [5][6].")


def test_the_request_names_the_model_carries_the_key_and_the_descriptions_as_data(seed_day, model_server):
    seed, topic, response = seed_day
    answer(model_server, response)
    draft_digest(topic, seed.date)
    request, _ = model_server.log[0]
    assert request.headers["Authorization"] == f"Bearer {KEY}"
    body = request.get_json()
    assert body["model"] == MODEL
    assert body["response_format"]["type"] == "json_schema"
    assert body["response_format"]["json_schema"]["schema"]["required"] == [
        "headline", "summary", "body", "action_items", "faq"]
    data = body["messages"][1]["content"]
    block = data[data.index("<<<CHANGES"):data.index("CHANGES>>>")]
    for reference in Reference.objects.filter(repository__topic=topic, kind=Reference.Kind.PULL_REQUEST):
        assert f"{reference.repository.full_name}#{reference.number}" in block
    if seed.date.day == 29:
        assert "[1] pytorch/pytorch#186025 (pull request) [Inductor] Restore external object registry" in block
        assert "This snapshots the registry after forward completion" in block
        assert "Please describe" not in block and "[ ] I added" not in block and "cc @ezyang" not in block


def test_redrafting_the_same_day_does_not_ask_again_and_keeps_editor_changes(seed_day, model_server):
    seed, topic, response = seed_day
    answer(model_server, response)
    digest = draft_digest(topic, seed.date).digest
    digest.headline = "An editor's headline"
    digest.save()
    result = draft_digest(topic, seed.date)
    assert len(chat_requests(model_server)) == 1
    digest.refresh_from_db()
    assert digest.headline == "An editor's headline" and "headline" in result.kept
    record = DigestDraft.objects.get(digest=digest)
    assert record.writer == DigestDraft.Writer.MODEL and record.raw_response == json.dumps(response)
    assert "reused its answer" in result.summary()


def test_the_command_says_which_writer_wrote_the_draft(seed_day, model_server, capsys):
    seed, topic, response = seed_day
    response = {**response, "body": [*response["body"], {"text": "It is 99% faster.", "cites": [1]}]}
    answer(model_server, response)
    call_command("draft_digest", "pytorch", seed.date.isoformat())
    out = capsys.readouterr().out
    assert f"Written by the model {MODEL} (asked)." in out
    assert "dropped body: “It is 99% faster.” — the figure “99%” is in none of the references it cites" in out
    record = DigestDraft.objects.get(digest__date=seed.date)
    assert (record.input_tokens, record.output_tokens, record.prompt_version) == (1800, 600, "1")
    assert record.duration is not None and record.model == MODEL
