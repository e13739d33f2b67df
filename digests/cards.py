"""The parts of a digest's pages that depend only on the digest and its own children, rendered on write.

Rendering a listing card (byline, plain-text teaser) or a digest page's references,
action items, FAQ and JSON-LD through templates on every request costs tens of
milliseconds; none of it changes between writes. So, like ``body_html``, it is
rendered once into the digest's row and printed with ``|safe`` (the templates here
escape every value, and ``summary_html`` was sanitised when it was rendered).

Everything is rendered from plain values (``.values()`` rows), never model methods,
so the same function serves the signals in ``models.py``, ``refresh_rendered()``,
the benchmark generator and the data migration (which only has historical models).
What depends on *other* digests -- previous/next, whether a digest is visible yet --
is never stored here; the views decide it at request time.
"""
import html
import re

from django.db import transaction
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils.formats import date_format
from django.utils.html import strip_tags
from django.utils.text import Truncator

from publishing import structured_data
from publishing.rendering import cut_at_word, link_citations, plain_text
from publishing.signals import announce_bulk_write

from .citations import strip_citations

#: The stored fields this module renders (bulk_update names them).
FIELDS = ["description", "meta_description", "byline_html", "card_html", "page_html", "head_html"]
TEASER_WORDS = 45
BATCH = 500
#: Digests a worker locks and re-renders at a time after a rename (``refresh_after_rename``).
RENAME_BATCH = 100

DIGEST_VALUES = ["id", "slug", "headline", "summary", "summary_html", "section", "label", "byline", "disclosure",
                 "date", "published_at", "updated_at", "topic__name", "topic__slug"]
CITATION_VALUES = ["digest_id", "number", "reference__kind", "reference__title", "reference__number",
                   "reference__url", "reference__repository__full_name", "reference__repository_id"]
ACTION_VALUES = ["digest_id", "text", "priority", "repository__full_name", "repository_id"]
FAQ_VALUES = ["digest_id", "question", "answer"]


def display_title(kind: str, title: str, number: int | None) -> str:
    """The title as the seed digests show it: commits carry their PR number, "(#186025)"."""
    if kind == "commit" and number and f"(#{number})" not in title:
        return f"{title} (#{number})"
    return title


def repository_path(full_name: str) -> str:
    owner, name = full_name.split("/", 1)
    return reverse("digests:repository", args=[owner, name])


def kicker(section: str, label: str) -> str:
    return " · ".join(part for part in (section, label) if part)


ORPHANED_PUNCTUATION = re.compile(r"\s+([.,;:!?])(?=\s|$)")


def plain_summary(summary: str) -> str:
    """The summary without citation markers, as prose: "operations [1]." -> "operations." (no " .")."""
    return ORPHANED_PUNCTUATION.sub(r"\1", " ".join(strip_citations(summary).split()))


def default_faq(topic: str, day: str, summary: str, actions: list[str], shipped: list[str]) -> list[tuple[str, str]]:
    """The FAQ the seed digests carry, generated from a digest's content (see ``Digest.default_faq``).

    A question with nothing to answer (no action items, say) is left out: the
    admin requires every answer, so an empty one would make the digest unsavable.
    """
    questions = [
        (f"What changed in {topic} on {day}?", plain_summary(summary)),
        (f"What should {topic} teams do about it?", " • ".join(action for action in actions if action.strip())),
        (f"Which {topic} repositories shipped on {day}?", ", ".join(shipped)),
    ]
    return [(question, answer) for question, answer in questions if answer.strip()]


#: A citation link as ``render_markdown(citations=True)`` writes it, with the space before it.
CITATION_LINK = re.compile(r'\s*<a class="citation" [^>]*>\[\d+\]</a>')


def meta_description(summary_html: str) -> str:
    """The summary as plain text without its "[1]" citation links (noise in a search result), cut at a word."""
    return cut_at_word(plain_text(CITATION_LINK.sub("", summary_html)))


def disclosure(text: str) -> str:
    """The disclosure line under the byline, as the blog prints a post's (``includes/disclosure.html``, escaped)."""
    text = text.strip()
    shown = text[len("Disclosure."):].lstrip() if text.lower().startswith("disclosure.") else text
    return render_to_string("includes/disclosure.html", {"post": {"disclosure": text, "disclosure_text": shown}})


def _values(model) -> list[str]:
    """``DIGEST_VALUES`` the (maybe historical) model has: a data migration older than a column renders without it."""
    names = {field.name for field in model._meta.get_fields()}
    return [name for name in DIGEST_VALUES if name.split("__", 1)[0] in names]


def render(digest: dict, citations: list[dict], actions: list[dict], faq: list[dict]) -> dict[str, str]:
    """Every stored field of one digest, from its ``DIGEST_VALUES`` row and its children's rows."""
    day = date_format(digest["date"], "F j, Y")
    description = " ".join(html.unescape(strip_tags(digest["summary_html"])).split())  # plain text
    references = [
        {"number": row["number"], "kind": row["reference__kind"], "url": row["reference__url"],
         "title": display_title(row["reference__kind"], row["reference__title"], row["reference__number"]),
         "repository": row["reference__repository__full_name"],
         "repository_url": repository_path(row["reference__repository__full_name"])}
        for row in citations
    ]
    shipped = list(dict.fromkeys(reference["repository"] for reference in references))
    items = [{"text": row["text"], "priority": row["priority"], "repository": row["repository__full_name"],
              "repository_url": repository_path(row["repository__full_name"]) if row["repository__full_name"] else ""}
             for row in actions]
    questions = [(row["question"], row["answer"]) for row in faq] or default_faq(
        digest["topic__name"], day, digest["summary"], [item["text"] for item in items], shipped)
    url = reverse("digests:detail", args=[digest["slug"]])
    topic = {"name": digest["topic__name"], "url": reverse("digests:topic", args=[digest["topic__slug"]])}
    byline = render_to_string("digests/parts/byline.html", {"digest": digest, "day": day, "topic": topic})
    disclosed = disclosure(digest.get("disclosure", ""))  # the page's header and e-mails, not the listing card
    teaser = Truncator(description).words(TEASER_WORDS)
    return {
        "description": description,
        "meta_description": meta_description(digest["summary_html"]),
        "byline_html": byline + disclosed,
        "card_html": render_to_string("digests/parts/card.html", {
            "kicker": kicker(digest["section"], digest["label"]), "url": url, "headline": digest["headline"],
            "byline": byline, "teaser": teaser,
        }),
        "page_html": render_to_string("digests/parts/page.html", {
            "items": items, "references": references,
            "faq": [(question, link_citations(answer)) for question, answer in questions],  # cited like the body
            "shipped": [(name, repository_path(name)) for name in shipped],
        }),
        "head_html": render_to_string("digests/parts/head.html", {
            "article": structured_data.news_article(
                {**digest, "url": url, "description": description, "kicker": kicker(digest["section"], digest["label"]),
                 "topic": topic["name"]}, references),
            "faq": structured_data.faq_page([(q, " ".join(strip_citations(a).split())) for q, a in questions]),
        }),
    }


def _rows(model, field: str, ids: list[int], values: list[str], order: list[str]) -> dict[int, list[dict]]:
    related = model._meta.get_field(field).related_model
    grouped: dict[int, list[dict]] = {digest_id: [] for digest_id in ids}
    for row in related.objects.filter(digest_id__in=ids).order_by("digest_id", *order).values(*values):
        grouped[row["digest_id"]].append(row)
    return grouped


def refresh(digests) -> int:
    """Render and store the fields of every digest in the queryset `digests`; returns how many.

    Also rewrites the digest's ``DigestRepository`` rows (the repositories it cites
    or names), which ``Digest.citing()`` reads. Seven queries per batch of ``BATCH``
    digests, whatever their size. Works on
    historical models too, so migrations can call it. ``bulk_update`` sends no
    signals and does not touch ``updated_at``: callers invalidate the page cache.
    """
    model = digests.model
    ids = list(digests.order_by().values_list("id", flat=True))
    for start in range(0, len(ids), BATCH):
        batch = ids[start:start + BATCH]
        citations = _rows(model, "digest_references", batch, CITATION_VALUES, ["number"])
        actions = _rows(model, "action_items", batch, ACTION_VALUES, ["position", "id"])
        faq = _rows(model, "faq_entries", batch, FAQ_VALUES, ["position", "id"])
        updated = []
        for row in model.objects.filter(id__in=batch).values(*_values(model)):
            fields = render(row, citations[row["id"]], actions[row["id"]], faq[row["id"]])
            updated.append(model(id=row["id"], **fields))
        model.objects.bulk_update(updated, FIELDS)
        _link_repositories(model, batch, citations, actions)
    return len(ids)


def _link_repositories(model, batch: list[int], citations: dict, actions: dict) -> None:
    link = model._meta.get_field("repository_links").related_model
    link.objects.filter(digest_id__in=batch).delete()
    link.objects.bulk_create(
        link(digest_id=digest_id, repository_id=repository_id)
        for digest_id in batch
        for repository_id in dict.fromkeys(
            [row["reference__repository_id"] for row in citations[digest_id]]
            + [row["repository_id"] for row in actions[digest_id] if row["repository_id"]]
        )
    )


def refresh_after_rename(digests, claim) -> int:
    """A worker's part of renaming a topic or repository (``publishing.rerenders``): re-render `digests`.

    A batch at a time, its rows locked while they are read and written, so of two workers re-rendering
    the same digest (a topic renamed twice) the later reads what the earlier wrote; the caches hear of
    each batch once it is done (``announce_bulk_write``), and `claim` is renewed after each.
    """
    model = digests.model
    ids = list(digests.order_by("pk").values_list("pk", flat=True))
    for start in range(0, len(ids), RENAME_BATCH):
        batch = ids[start : start + RENAME_BATCH]
        with transaction.atomic():
            list(model.objects.filter(pk__in=batch).order_by("pk").select_for_update().values_list("pk", flat=True))
            refresh(model.objects.filter(pk__in=batch))
        announce_bulk_write(model, batch)
        claim.renew()
    return len(ids)
