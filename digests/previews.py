"""How a digest's text fields render, for the admin's preview beside them (``publishing.previews``).

The summary and body cite references by number, the body shows images, an FAQ answer is plain
text whose citations link: as ``Digest.save`` and ``cards.render`` render them. What a citation
points at is taken from the form as it stands -- the rows of "Cited references" as typed, a row
deleted there no longer counts, one added there does -- over the rows saved (a redraft may have
added some since the form was opened), so an editor sees what [4] will link to before saving.
"""
from publishing.previews import Cited, Markdown

from .cards import display_title
from .models import Digest, DigestReference, Reference

#: The citation rows' form prefix: the admin's inline formset of ``Digest.digest_references``.
PREFIX = "digest_references"
#: Rows read from a posted form at most (Django refuses more than 1,000 fields anyway).
MAX_ROWS = 500


def _number(value) -> int | None:
    text = str(value or "").strip()
    return int(text) if text.isascii() and text.isdigit() and len(text) <= 9 else None  # "²".isdigit()


def typed_rows(data) -> list[tuple[int | None, int | None, int | None, bool]]:
    """The posted citation rows: (row id, number, reference id, deleted) each; none when the form sent none."""
    total = min(_number(data.get(f"{PREFIX}-TOTAL_FORMS")) or 0, MAX_ROWS)
    return [(_number(data.get(f"{PREFIX}-{i}-id")), _number(data.get(f"{PREFIX}-{i}-number")),
             _number(data.get(f"{PREFIX}-{i}-reference")), bool(data.get(f"{PREFIX}-{i}-DELETE")))
            for i in range(total)]


def cited_as_typed(request, digest: Digest | None) -> dict[int, Cited]:
    """The references by citation number as the form stands: saved rows the form did not post, then its rows."""
    rows = typed_rows(request.POST)
    posted_ids = {row_id for row_id, _number, _reference, _deleted in rows if row_id is not None}
    by_number: dict[int, int] = {}
    if digest is not None:
        saved = DigestReference.objects.filter(digest=digest).exclude(pk__in=posted_ids)
        by_number.update(saved.values_list("number", "reference_id"))
    by_number.update((number, reference) for _row, number, reference, deleted in rows
                     if not deleted and number is not None and reference is not None)
    found = Reference.objects.select_related("repository").in_bulk(set(by_number.values()))
    return {number: _cited(number, found[reference]) for number, reference in sorted(by_number.items())
            if reference in found}


def _cited(number: int, reference: Reference) -> Cited:
    return Cited(number=number, title=display_title(reference.kind, reference.title, reference.number),
                 url=reference.url, source=reference.repository.full_name)


#: The digest's own fields, and an FAQ answer's: as the page renders them.
SUMMARY = Markdown(citations=True, references=cited_as_typed)
BODY = Markdown(citations=True, images=True, references=cited_as_typed)
FAQ_ANSWER = Markdown(plain=True, references=cited_as_typed)
FIELDS = {"summary": SUMMARY, "body": BODY}
