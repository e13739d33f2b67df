"""The Wire over the API: digests, action items, references, topics, repositories.

Reads go through ``visible()`` (published only, unless the token may read
drafts); writes live in ``digests.api_writes`` and obey the same rules as the admin.
"""
from django.db.models import Prefetch
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404
from ninja import Query, Router

from api.compiled import is_unfiltered, paginate_unfiltered
from api.auth import PUBLIC, can_read_drafts, visible, with_status
from api.errors import error_responses
from api.pagination import Page, paginate
from api.responses import conditional_json, list_response, moment_text, set_list_caching, url_maker
from api.throttling import throttles

from . import api_writes
from .models import ActionItem, Digest, DigestReference, Reference, Repository, Topic
from .schemas import (
    ActionItemFilters, ActionItemListOut, DigestFilters, DigestListOut, DigestOut, ReferenceDetailOut,
    ReferenceFilters, ReferenceOut, RepositoryFilters, RepositoryOut, TopicFilters, TopicOut,
)

router = Router(tags=["The Wire"])

LIST = {**PUBLIC, "throttle": throttles("list")}
DETAIL_RESPONSES = {304: None, **error_responses(401, 404, 412)}


def apply_lookups(queryset, params, lookups: dict[str, str]):
    """Filter by every parameter that was given, through its ORM lookup."""
    for name, lookup in lookups.items():
        value = getattr(params, name)
        if value is not None:
            queryset = queryset.filter(**{lookup: value})
    return queryset


@router.get("/digests/", response={200: Page[DigestListOut], **error_responses(401, 403)}, **LIST)
def list_digests(request: HttpRequest, response: HttpResponse, filters: Query[DigestFilters]):
    """Digests, oldest change first. Filters combine with AND."""
    if is_unfiltered(request):
        page = paginate_unfiltered(request, Digest, filters, fields=DIGEST_LIST_FIELDS)
        page["items"] = digest_list_items(page["items"])
        return list_response(request, page)
    digests = visible(request, Digest.objects.all())
    digests = apply_lookups(
        digests, filters, {"topic": "topic__slug", "date_from": "date__gte", "date_to": "date__lte"}
    )
    if filters.repository:
        repository = Repository.objects.filter(full_name__iexact=filters.repository).first()
        digests = digests.citing(repository) if repository else digests.none()
    if filters.priority:
        digests = digests.with_action_priority(filters.priority)
    digests = with_status(request, digests, filters.status)
    page = paginate(request, digests, filters, fields=DIGEST_LIST_FIELDS, count_in_page=True)
    page["items"] = digest_list_items(page["items"])
    return list_response(request, page)


#: The columns DigestListOut shows (Markdown and HTML of the summary, not of the body).
DIGEST_LIST_FIELDS = (
    "id", "slug", "topic__slug", "topic__name", "date", "section", "label", "headline", "summary",
    "summary_html", "byline", "status", "published_at", "updated_at",
)


def digest_list_items(rows: list[dict]) -> list[dict]:
    """DigestListOut items from ``.values()`` rows: no model instances, one reverse() per page, dates
    and times as the text the renderer would write."""
    url = url_maker("digests:detail")
    for row in rows:
        row["url"] = url(row["slug"])
        row["topic"] = {"slug": row.pop("topic__slug"), "name": row.pop("topic__name")}
        row["date"] = row["date"].isoformat()
        row["published_at"] = moment_text(row["published_at"])
        row["updated_at"] = moment_text(row["updated_at"])
    return rows


@router.get("/digests/{slug}", response={200: DigestOut, **DETAIL_RESPONSES}, **PUBLIC)
def get_digest(request: HttpRequest, slug: str):
    """One digest with its numbered references, action items and FAQ, as Markdown and as HTML."""
    digest = get_object_or_404(visible(request, Digest.objects.all()).with_page_data(), slug=slug)
    return conditional_json(request, DigestOut, digest, digest_last_modified(digest), digest.is_published)


def digest_last_modified(digest: Digest):
    """The latest change to the digest or anything it shows that has a timestamp."""
    stamps = [digest.updated_at, digest.topic.updated_at]
    stamps += [item.reference.updated_at for item in digest.digest_references.all()]
    stamps += digest.image_uses.values_list("image__updated_at", flat=True)  # their renditions and alt text show
    return max(stamps)


@router.get("/action-items/", response={200: Page[ActionItemListOut], **error_responses(401)}, **LIST)
def list_action_items(request: HttpRequest, response: HttpResponse, filters: Query[ActionItemFilters]):
    """Action items of visible digests; `updated_since` applies to the digest's last change."""
    items = ActionItem.objects.filter(digest__in=visible(request, Digest.objects.all()))
    items = items.select_related("digest__topic", "repository")
    items = apply_lookups(items, filters, {
        "repository": "repository__full_name__iexact", "priority": "priority", "topic": "digest__topic__slug",
        "date_from": "digest__date__gte", "date_to": "digest__date__lte",
    })
    set_list_caching(request, response)
    return paginate(
        request, items, filters, keys=("digest__updated_at", "id"), updated_field="digest__updated_at"
    )


def of_repository(references, full_name: str):
    """References of the repository named `full_name` (any case), filtered by its id.

    Looked up first, so PostgreSQL knows which repository it is planning for:
    through a join on the name it guessed a few hundred rows for any repository,
    and for one with 25,000 references read and sorted all of them (~100 ms)
    instead of walking the ``reference_repository_updated`` index (~2 ms).
    """
    repository_id = Repository.objects.filter(full_name__iexact=full_name).values_list("pk", flat=True).first()
    return references.none() if repository_id is None else references.filter(repository_id=repository_id)


@router.get("/references/", response={200: Page[ReferenceOut], **error_responses(401)}, **LIST)
def list_references(request: HttpRequest, response: HttpResponse, filters: Query[ReferenceFilters]):
    """GitHub activity cited by digests you can see (all of it for read:drafts tokens)."""
    references = visible(request, Reference.objects.all()).select_related("repository")
    references = apply_lookups(references, filters, {
        "kind": "kind", "merged_from": "merged_at__gte", "merged_to": "merged_at__lte",
    })
    if filters.repository is not None:
        references = of_repository(references, filters.repository)
    if filters.cited is not None:
        references = references.cited_by(visible(request, Digest.objects.all()), filters.cited)
    set_list_caching(request, response)
    return paginate(request, references, filters)


@router.get(
    "/references/{int:reference_id}", response={200: ReferenceDetailOut, **DETAIL_RESPONSES}, **PUBLIC
)
def get_reference(request: HttpRequest, reference_id: int):
    """One reference with the visible digests that cite it."""
    citations = DigestReference.objects.filter(digest__in=visible(request, Digest.objects.all()))
    references = visible(request, Reference.objects.all()).select_related("repository").prefetch_related(
        Prefetch("citations", queryset=citations.select_related("digest"), to_attr="visible_citations")
    )
    reference = get_object_or_404(references, pk=reference_id)
    return conditional_json(
        request, ReferenceDetailOut, reference, reference.updated_at, public=not can_read_drafts(request)
    )


@router.get("/topics/", response={200: Page[TopicOut], **error_responses(401)}, **LIST)
def list_topics(request: HttpRequest, response: HttpResponse, filters: Query[TopicFilters]):
    set_list_caching(request, response)
    return paginate(request, visible(request, Topic.objects.all()), filters)


@router.get("/repositories/", response={200: Page[RepositoryOut], **error_responses(401)}, **LIST)
def list_repositories(request: HttpRequest, response: HttpResponse, filters: Query[RepositoryFilters]):
    repositories = visible(request, Repository.objects.all()).select_related("topic")
    repositories = apply_lookups(repositories, filters, {"topic": "topic__slug"})
    set_list_caching(request, response)
    return paginate(request, repositories, filters)


api_writes.register(router)
