"""The model's draft of a digest: ask, check, and render what survives in the draft's fields.

``write`` is what ``drafting`` calls when ``DRAFTING_MODEL_URL`` is set. It builds
the request (``drafting_prompt``), reuses the stored answer when the request is
unchanged (no second call), else asks the server (``drafting_model``), checks the
answer (``drafting_checks``) and renders the survivors in the form the
rule-based writer and the published seeds use: a headline, a Markdown summary
and body whose citations are ``[n]`` links, action items with repository and
priority, and an FAQ. ``Written.fields`` is None when the rule-based writer must
write the draft instead; ``Written.reason`` says why.
"""
import datetime
import json
import time
from dataclasses import dataclass, field

from django.conf import settings

from digests.models import Repository

from . import drafting_checks, drafting_model, drafting_prompt
from .drafting_changes import Change
from .drafting_text import MARKDOWN_SPECIAL, md_escape
from .models import DigestDraft

@dataclass
class Written:
    """What the model writer did, as recorded on the digest's DigestDraft."""

    fields: dict | None = None
    writer: str = DigestDraft.Writer.FALLBACK
    reason: str = ""
    called: bool = False  # False: the stored answer to the same request was reused
    record: dict = field(default_factory=dict)  # DigestDraft's model fields

    def report(self) -> str:
        """Lines for the command and the run's report: which writer, and what was dropped and why."""
        if self.writer == DigestDraft.Writer.MODEL:
            how = "asked" if self.called else "reused its answer to the same request"
            lines = [f"Written by the model {self.record.get('model')} ({how})."]
        else:
            lines = [f"Written by the rule-based writer: {self.reason}."]
        lines += [f"  dropped {item['part']}: “{item['text']}” — {item['reason']}"
                  for item in self.record.get("dropped", [])]
        return "\n".join(lines)


#: The disclosure line a model-drafted digest gets unless an editor wrote one (``Digest.disclosure``).
DISCLOSURE = "Drafted by RepoJournal from the day's merged pull requests and reviewed by an editor."


def sources(changes: list[Change]) -> dict[int, drafting_checks.Source]:
    """Each citation number's repository and words; a PR and its merge commit share theirs."""
    found = {}
    for change in changes:
        words = []
        for citation in change.citations:
            reference = citation.reference
            words += [reference.title, reference.body or "", f"#{reference.number}" if reference.number else "",
                      f"{reference.repository.full_name}#{reference.number}" if reference.number else ""]
        text = "\n".join(words)
        for citation in change.citations:
            found[citation.number] = drafting_checks.Source(change.reference.repository.full_name, text)
    return found


def _with_citations(text: str, cites: list[int]) -> str:
    """Markdown: the text escaped but its ``[n]`` citations, and the ``cites`` not inline before its stop."""
    inline = [int(n) for n in drafting_checks.CITATION.findall(text)]
    pieces = drafting_checks.CITATION.split(" ".join(text.split()))
    rendered = "".join(f"[{piece}]" if index % 2 else MARKDOWN_SPECIAL.sub(r"\\\1", piece)
                       for index, piece in enumerate(pieces))
    extra = "".join(f"[{n}]" for n in dict.fromkeys(cites) if n not in inline)
    if not extra:
        return rendered
    stripped = rendered.rstrip(".!?")
    return f"{stripped} {extra}{rendered[len(stripped):]}"


def _plain(text: str) -> str:
    """Plain text without inline citations (action items and FAQ answers carry none)."""
    return " ".join(drafting_checks.CITATION.sub("", text).split()).replace(" ,", ",").replace(" .", ".")


def _also_merged(changes: list[Change], cited: set[int]) -> str:
    """Check 7: the changes no surviving sentence cites, listed so nothing silently disappears."""
    missing = [change for change in changes if not cited.intersection(change.numbers)]
    if not missing:
        return ""
    lines = [f"- {md_escape(change.reference.title)} ({md_escape(change.reference.repository.full_name)}"
             + (f"#{change.reference.number}" if change.reference.number else "") + ") "
             + "".join(f"[{n}]" for n in change.numbers) for change in missing]
    return "**Also merged:**\n\n" + "\n".join(lines)


def render(checked: drafting_checks.Checked, changes: list[Change], repositories: dict[str, int]) -> dict:
    """The surviving parts as the draft's fields (the shape ``drafting._snapshot`` compares)."""
    cited = {n for item in checked.summary + checked.body
             for n in drafting_checks.numbers_in(item.text, item.cites)}
    body = [_with_citations(item.text, item.cites) for item in checked.body]
    also = _also_merged(changes, cited)
    return {
        "headline": checked.headline,
        "summary": " ".join(_with_citations(item.text, item.cites) for item in checked.summary),
        "body": "\n\n".join(body + ([also] if also else [])),
        "action_items": [[_plain(item.text), repositories[item.repository.lower()], item.priority]
                         for item in checked.action_items if item.repository.lower() in repositories],
        "faq": [[_plain(entry.question), _plain(entry.answer)] for entry in checked.faq],
    }


def _ask(prompt: drafting_prompt.Prompt, previous: DigestDraft | None) -> tuple[dict, dict, bool]:
    """The answer's JSON and what to record of it: the stored one if the request is unchanged."""
    if previous is not None and previous.request_hash == prompt.request_hash and previous.raw_response:
        record = {name: getattr(previous, name) for name in ("input_tokens", "output_tokens", "duration",
                                                             "raw_response")}
        return json.loads(previous.raw_response), record, False
    started = time.monotonic()
    answer = drafting_model.complete(prompt.messages, drafting_checks.response_schema(), drafting_checks.parse)
    record = {"input_tokens": answer.input_tokens, "output_tokens": answer.output_tokens,
              "duration": datetime.timedelta(seconds=time.monotonic() - started), "raw_response": answer.content}
    return answer.data, record, True


def _prompt(digest, changes: list[Change]) -> drafting_prompt.Prompt:
    names = [r.full_name for r in Repository.objects.filter(topic=digest.topic_id).order_by("full_name")]
    return drafting_prompt.build(digest.topic, digest.date, changes, names, settings.DRAFTING_MODEL_MAX_INPUT_TOKENS)


def request_hash(digest, changes: list[Change]) -> str:
    """The hash of the request ``write`` would send for these changes (``drafting`` compares it, asking nothing)."""
    return _prompt(digest, changes).request_hash


def write(digest, changes: list[Change], previous: DigestDraft | None) -> Written:
    """Draft ``digest`` from ``changes`` with the model; see the module docstring.

    ``digest`` may be unsaved (its topic and date set): ``drafting`` calls this before its transaction.
    """
    topic_repositories = {r.full_name.lower(): r.pk for r in Repository.objects.filter(topic=digest.topic_id)}
    prompt = _prompt(digest, changes)
    written = Written(record={"model": settings.DRAFTING_MODEL, "prompt_version": drafting_prompt.PROMPT_VERSION,
                              "request_hash": prompt.request_hash, "dropped": [], "raw_response": "",
                              "input_tokens": None, "output_tokens": None, "duration": None})
    try:
        data, answer, written.called = _ask(prompt, previous)
        written.record.update(answer)
        checked = drafting_checks.check(drafting_checks.parse(data), sources(changes), set(topic_repositories))
    except (drafting_model.ModelFailed, ValueError) as exc:
        written.reason = f"the model failed: {exc}"
        written.record["request_hash"] = ""  # a failure is asked again next time
        return written
    written.record["dropped"] = checked.dropped
    if checked.fallback:
        written.reason = checked.fallback
        return written
    written.writer, written.fields = DigestDraft.Writer.MODEL, render(checked, changes, topic_repositories)
    return written
