"""Turn a day of merged pull requests and commits into a draft digest an editor finishes.

``draft_digest(topic, day)`` creates the day's digest as a draft, or refreshes
it. What it generated last time is kept in a DigestDraft record; a field whose
current value still equals that is the generator's and may be rewritten, any
other value is the editor's and is never touched. References are only ever
added, under new numbers, so citations in edited text stay valid.

With ``DRAFTING_MODEL_URL`` set, a language model writes the text
(``drafting_writer``, docs/drafting.md) and the rule-based writer here writes
it only when the model's draft fails; unset, nothing calls out.
"""
import datetime
from dataclasses import dataclass, field

import reversion
from django.db import transaction
from django.db.models import Max, Q
from django.utils import timezone

from digests.models import ActionItem, Digest, DigestReference, FAQEntry, Reference
from publishing.text import normalised  # editors' text compared as they mean it (CRLF, ends)
from publishing.workflow import Status

from . import drafting_model, drafting_text, drafting_writer
from .drafting_changes import fold, without_merge_commits
from .bots import exclude_bots
from .models import DigestDraft, IngestionRun
from .runs import recorded_run

FIELDS = ("headline", "summary", "body", "action_items", "faq")


@dataclass
class DraftResult:
    """What a (re)generation did, for the command, the admin and the run record."""

    digest: Digest | None
    created: bool = False
    added: list[DigestReference] = field(default_factory=list)
    refreshed: list[str] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)
    skipped: str = ""
    written: drafting_writer.Written | None = None  # the model writer's account, if it was asked

    def summary(self) -> str:
        if self.skipped:
            return self.skipped
        verb = "Created" if self.created else "Refreshed"
        lines = [f"{verb} draft “{self.digest.headline}” with {len(self.added)} new reference(s)."]
        lines += [f"  new: [{item.number}] {item.reference.display_title}" for item in self.added]
        if self.kept:
            lines.append(f"  kept editor changes to: {', '.join(self.kept)}")
        if self.written is not None:
            lines.append(self.written.report())
        return "\n".join(lines)


def day_activity(topic, day: datetime.date):
    """The topic's merged pull requests and landed commits of ``day`` (UTC), bots excluded."""
    start = datetime.datetime.combine(day, datetime.time(), tzinfo=datetime.UTC)
    landed = Q(kind=Reference.Kind.PULL_REQUEST, state="merged") | Q(kind=Reference.Kind.COMMIT)
    references = Reference.objects.filter(
        landed, repository__topic=topic, merged_at__gte=start, merged_at__lt=start + datetime.timedelta(days=1)
    ).select_related("repository")
    return exclude_bots(references)


def grouped(references) -> list[Reference]:
    """By repository (busiest first), pull requests by number, then commits; a PR's merge commit left out.

    A pull request and the commit that merged it are one change, cited once (by the PR).
    """
    references = without_merge_commits(list(references))
    per_repo: dict[str, int] = {}
    for reference in references:
        per_repo[reference.repository.full_name] = per_repo.get(reference.repository.full_name, 0) + 1

    def key(reference):
        is_commit = reference.kind == Reference.Kind.COMMIT
        return (-per_repo[reference.repository.full_name], reference.repository.full_name,
                reference.number or 10**9, is_commit, reference.merged_at, reference.pk)

    return sorted(references, key=key)


def _snapshot(digest: Digest) -> dict:
    """The generator-owned fields as currently stored, in a JSON-comparable form."""
    return {
        "headline": digest.headline,
        "summary": digest.summary,
        "body": digest.body,
        "action_items": [[item.text, item.repository_id, item.priority] for item in digest.action_items.all()],
        "faq": [[entry.question, entry.answer] for entry in digest.faq_entries.all()],
    }


def _add_references(digest: Digest, references: list[Reference]) -> list[DigestReference]:
    """Cite the day's new references, numbered after the last one, in one statement.

    Not one ``create()`` each: every citation saved re-renders its digest (digests.signals), so a day of
    500 changes rendered the digest 500 times, each longer than the last. The digest is saved (and so
    rendered, once) when its fields are refreshed, in the same transaction (``_refresh``).
    """
    cited = set(digest.digest_references.values_list("reference_id", flat=True))
    number = digest.digest_references.aggregate(top=Max("number"))["top"] or 0
    new = [reference for reference in references if reference.pk not in cited]
    return DigestReference.objects.bulk_create(
        DigestReference(digest=digest, reference=reference, number=number)
        for number, reference in enumerate(new, start=number + 1)
    )


def _apply(digest: Digest, name: str, value) -> None:
    if name in ("headline", "summary", "body"):
        setattr(digest, name, value)
    elif name == "action_items":
        digest.action_items.all().delete()
        ActionItem.objects.bulk_create(
            ActionItem(digest=digest, position=position, text=text, repository_id=repository_id, priority=priority)
            for position, (text, repository_id, priority) in enumerate(value, start=1)
        )
    else:
        digest.faq_entries.all().delete()
        FAQEntry.objects.bulk_create(
            FAQEntry(digest=digest, position=position, question=question, answer=answer)
            for position, (question, answer) in enumerate(value, start=1)
        )


def _generate(digest: Digest, result: DraftResult) -> dict:
    """Fresh text for the generator-owned fields, from the digest's citations: the model's if it was
    asked (``_ask_model``, before the transaction) and its draft passes, else the rule-based writer's
    (without the FAQ, made from the rest)."""
    if result.written is not None and result.written.fields is not None:
        return result.written.fields
    changes = fold(list(digest.digest_references.select_related("reference__repository").order_by("number")))
    return {
        "headline": drafting_text.headline(changes),
        "summary": drafting_text.summary(changes),
        "body": drafting_text.body(changes),
        "action_items": drafting_text.action_items(changes),
    }


def _update_field(digest: Digest, name: str, current: dict, fresh: dict, record, result: DraftResult):
    """Rewrite one field if the generator still owns it; returns the value to remember as generated."""
    owned = result.created or (
        record is not None and normalised(current[name]) == normalised(record.generated.get(name))
    )
    if not owned:
        result.kept.append(name)
        return record.generated.get(name) if record else None
    if normalised(current[name]) != normalised(fresh[name]):
        _apply(digest, name, fresh[name])
        result.refreshed.append(name)
    return fresh[name]


def _writer_record(result: DraftResult) -> dict:
    """DigestDraft's account of who wrote the draft (blank model fields for the rule-based writer)."""
    written = result.written
    if written is None:
        reason = ("asked to draft without the model (the admin drafts inline; the task and the command ask it)"
                  if drafting_model.configured() else "DRAFTING_MODEL_URL is not set")
        return {"writer": DigestDraft.Writer.RULES, "writer_reason": reason, "model": "",
                "prompt_version": "", "request_hash": "", "input_tokens": None, "output_tokens": None,
                "duration": None, "raw_response": "", "dropped": []}
    return {"writer": written.writer, "writer_reason": written.reason, **written.record}


def _refresh(digest: Digest, record: DigestDraft | None, result: DraftResult) -> None:
    """Rewrite the fields the editor has not changed since the last generation."""
    current = _snapshot(digest)
    fresh = _generate(digest, result)
    if result.written is not None and result.written.fields is not None and not digest.disclosure.strip():
        digest.disclosure = drafting_writer.DISCLOSURE  # the editor's own line, if any, is kept
    generated = {}
    for name in FIELDS:
        if name == "faq" and not fresh.get("faq"):  # built from the summary and action items as they now stand
            digest.save()
            fresh["faq"] = [[question, drafting_text.md_unescape(answer)] for question, answer in digest.default_faq()]
        generated[name] = _update_field(digest, name, current, fresh, record, result)
    digest.save()
    DigestDraft.objects.update_or_create(digest=digest, defaults={
        "generated": generated, "report": result.summary(), "generated_at": timezone.now(), **_writer_record(result)})


def draft_digest(topic, day: datetime.date, *, use_model: bool = True) -> DraftResult:
    """Create or refresh the draft digest of ``topic`` for ``day``; see the module docstring.

    The model writes it if ``use_model`` and ``DRAFTING_MODEL_URL`` is set: only
    the task and the command do so (a model may take minutes: never in a web request).
    """
    with recorded_run(IngestionRun.Source.DRAFT, f"{topic.slug} {day}") as (run, counts):
        result = _draft(topic, day, use_model and drafting_model.configured())
        if result.skipped:
            run.status = IngestionRun.Status.IGNORED
            run.error = result.skipped
        counts.created = len(result.added)
    return result


def _draft(topic, day: datetime.date, use_model: bool) -> DraftResult:
    references = grouped(day_activity(topic, day))
    digest = Digest.objects.filter(topic=topic, date=day).first()
    if digest is not None and digest.status != Status.DRAFT:
        return DraftResult(digest, skipped=f"The {topic} digest of {day} is {digest.get_status_display()}; "
                                             "only drafts are regenerated.")
    if digest is None and not references:
        return DraftResult(None, skipped=f"Nothing from {topic} was merged on {day}; no digest drafted.")
    written = _ask_model(topic, day, digest, references) if use_model else None
    with transaction.atomic(), reversion.create_revision():
        reversion.set_comment("Drafted by draft_digest.")
        result = DraftResult(digest, created=digest is None)
        if digest is None:
            digest = Digest.objects.create(topic=topic, date=day, headline="(drafting)", summary="",
                                           status=Status.DRAFT)
            result.digest = digest
        record = DigestDraft.objects.filter(digest=digest).first()
        result.added = _add_references(digest, references)
        result.written = _still_current(written, digest)
        _refresh(digest, record, result)
    return result


def _planned(digest: Digest | None, references: list[Reference]) -> list[DigestReference]:
    """What the draft will cite once ``_add_references`` has run: its citations, then the day's new
    references numbered after them as it will number them (unsaved)."""
    existing = [] if digest is None else list(
        digest.digest_references.select_related("reference__repository").order_by("number"))
    cited = {citation.reference_id for citation in existing}
    top = max((citation.number for citation in existing), default=0)
    new = [reference for reference in references if reference.pk not in cited]
    return existing + [DigestReference(reference=reference, number=number)
                       for number, reference in enumerate(new, start=top + 1)]


def _ask_model(topic, day: datetime.date, digest: Digest | None, references: list[Reference]):
    """The model's draft of what the digest will cite, asked before the drafting transaction opens.

    The model may take minutes (3 attempts of DRAFTING_MODEL_TIMEOUT); inside the transaction that
    would hold the digest's row locks on PostgreSQL (the admin's saves of it waiting past gunicorn's
    timeout) and SQLite's single write lock under ``make run`` (every save "database is locked").
    ``_still_current`` checks, inside the transaction, that the answer is to what is then cited.
    """
    record = None if digest is None else DigestDraft.objects.filter(digest=digest).first()
    return drafting_writer.write(digest or Digest(topic=topic, date=day), fold(_planned(digest, references)), record)


def _still_current(written, digest: Digest):
    """``written`` if it answers the request the digest's citations now make, else a fallback.

    Another run (or an editor's citation) may have changed the citations, or ingestion a cited
    reference's text, while the model was writing: then its answer's numbers may cite the wrong
    changes. This run does not ask again (that would be inside the transaction, the thing
    ``_ask_model`` avoids): the rule-based writer writes this draft, and the next run asks the
    model anew (the request hash is not kept, as after a failure).
    """
    if written is None or written.fields is None:
        return written
    changes = fold(list(digest.digest_references.select_related("reference__repository").order_by("number")))
    if drafting_writer.request_hash(digest, changes) == written.record["request_hash"]:
        return written
    return drafting_writer.Written(
        reason="the digest's citations changed while the model was writing; the next run asks it again",
        called=written.called, record={**written.record, "request_hash": ""})


def note_opened(sender, object_id, user, **kwargs) -> None:
    """``change_page_opened`` receiver: a digest's change page, opened by someone who may edit it, opens its draft."""
    if sender is Digest:
        DigestDraft.objects.note_opened(object_id, user)
