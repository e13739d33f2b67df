"""What the newsroom shows, section by section, for one signed-in user.

Each section is one statement, whatever the archive's size: posts and digests are read
together (``UNION ALL`` of the same columns), ordered and cut at ``ROWS`` rows in the
database (one more is read, to know whether there are more than shown), with the user who
moved each item joined in. The statements read the editorial record on the items' own rows
(``PublishableModel.status_changed_at`` …) through indexes: the review queue and the
scheduled items by status and publication time, a user's drafts by the partial
``*_drafts_by_creator`` / ``*_drafts_by_editor`` indexes. A section the user may not act
on is not queried at all.
"""
import datetime
from dataclasses import dataclass

from django.db import connection
from django.db.models import CharField, F, Func, IntegerField, OuterRef, Q, Subquery, Value
from django.db.models.functions import Coalesce
from django.urls import reverse

from blog.models import Post
from digests.models import Digest, Reference
from ingestion.models import DigestDraft
from publishing.workflow import Status

#: Rows a section shows; its "see all" links lead to the filtered changelists.
ROWS = 10
#: Items waiting for review longer than this stand out.
OVERDUE = datetime.timedelta(hours=48)
#: How far ahead "Going out next" looks.
AHEAD = datetime.timedelta(days=7)
MODELS = {"post": Post, "digest": Digest}
TITLES = {Post: "title", Digest: "headline"}


@dataclass
class Item:
    """One row of an item section: a post or a digest, with the time and person the section is about."""

    kind: str
    pk: int
    label: str
    at: datetime.datetime
    url: str
    who: str = ""  # who moved it into its status; empty: not recorded
    moved_at: datetime.datetime | None = None  # when it was moved into its status; None: not recorded
    recorded: bool = True  # False: `at` is the last change, what the record lacks (a lower bound on the wait)
    overdue: bool = False
    returned: bool = False


@dataclass
class Section:
    items: list
    more: bool


def _rows(model, filters: Q, at):
    """One model's part of a section, in the columns every part shares (so parts combine with UNION ALL)."""
    return model.objects.filter(filters).order_by().values(
        item_id=F("pk"), kind=Value(model._meta.model_name, output_field=CharField()), heading=F(TITLES[model]),
        at=at, changed_at=F("status_changed_at"), by_username=F("status_changed_by__username"),
        by_first=F("status_changed_by__first_name"), by_last=F("status_changed_by__last_name"))


def _read(models, filters: Q, at, ordering: tuple[str, ...]) -> tuple[list[dict], bool]:
    """The first ROWS rows of the models' items matching `filters`, in one statement; and whether there are more.

    Where the database allows it, each part is ordered and cut too: its rows then come from an index in
    order and stop at ROWS + 1, instead of every match (a week of scheduled posts) read and sorted first.
    """
    parts = [_rows(model, filters, at) for model in models]
    if len(parts) > 1 and connection.features.supports_slicing_ordering_in_compound:
        parts = [part.order_by(*ordering)[:ROWS + 1] for part in parts]
    query = parts[0].union(*parts[1:], all=True) if len(parts) > 1 else parts[0]
    rows = list(query.order_by(*ordering)[:ROWS + 1])
    return rows[:ROWS], len(rows) > ROWS


def _who(row: dict) -> str:
    """The name of who moved the item (full name, else username); empty when nobody is recorded."""
    return " ".join(part for part in (row["by_first"], row["by_last"]) if part) or row["by_username"] or ""


def change_urls(models) -> dict:
    """Each model's admin change URL with a ``{}`` for the row's pk: ``reverse()`` once per model, not per row."""
    return {model._meta.model_name: reverse(f"admin:{model._meta.app_label}_{model._meta.model_name}_change",
                                            args=[0]).replace("/0/", "/{}/", 1) for model in models}


def _items(rows: list[dict], models) -> list[Item]:
    urls = change_urls(models)
    return [Item(kind=row["kind"], pk=row["item_id"], label=row["heading"], at=row["at"], who=_who(row),
                 url=urls[row["kind"]].format(row["item_id"]), moved_at=row["changed_at"],
                 recorded=row["changed_at"] is not None) for row in rows]


def waiting_for_review(models, now) -> Section:
    """Items in review, oldest submission first. Where the submission was not recorded (before the record
    existed), the item's last change stands in: it waited at least that long, so 48 h past it is overdue too."""
    rows, more = _read(models, Q(status=Status.IN_REVIEW), Coalesce("status_changed_at", "updated_at"),
                       ("at", "item_id"))
    items = _items(rows, models)
    for item in items:
        item.overdue = now - item.at > OVERDUE
    return Section(items, more)


def going_out_next(models, now) -> Section:
    """Published items whose publication time is in the next AHEAD (scheduled), soonest first."""
    filters = Q(status=Status.PUBLISHED, published_at__gt=now, published_at__lte=now + AHEAD)
    rows, more = _read(models, filters, F("published_at"), ("at", "item_id"))
    return Section(_items(rows, models), more)


def yours(models, user) -> Section:
    """The user's drafts -- created by them or last edited by them -- most recently changed first. A draft
    with a recorded move was returned to draft (drafts are created, never moved, in their status): it says
    by whom (``Item.returned``, ``Item.who``)."""
    filters = Q(status=Status.DRAFT) & (Q(created_by=user) | Q(edited_by=user))
    rows, more = _read(models, filters, F("updated_at"), ("-at", "-item_id"))
    items = _items(rows, models)
    for item in items:
        item.returned = item.recorded
    return Section(items, more)


class PlainCount(Func):
    """COUNT(expression) as a plain function, not an aggregate: a subquery counts its rows without GROUP BY."""

    function = "COUNT"
    output_field = IntegerField()


def references_since_draft():
    """References of a drafted digest's topic created after its draft was (last) generated.

    A correlated count per row of the one statement listing the drafts, one range of the
    (topic, created_at) index each: ``Reference.topic`` is the repository's, kept by the
    database, so the count reads the references counted and not every repository of the topic.
    """
    arrived = Reference.objects.filter(topic=OuterRef("digest__topic"), created_at__gt=OuterRef("generated_at"))
    return Coalesce(Subquery(arrived.order_by().annotate(count=PlainCount("pk")).values("count")), 0)


def drafted_digests() -> Section:
    """Drafted digests no editor has opened yet, most recently drafted first, with what arrived since."""
    drafts = (DigestDraft.objects.unopened().select_related("digest__topic")
              .only("generated_at", "digest__headline", "digest__date", "digest__topic__name")
              .annotate(arrived=references_since_draft()).order_by("-generated_at", "-pk")[:ROWS + 1])
    drafts, url = list(drafts), change_urls([Digest])["digest"]
    for draft in drafts:
        draft.change_url = url.format(draft.digest_id)
    return Section(drafts[:ROWS], len(drafts) > ROWS)
