"""Writing digests over the API, under the admin's rules.

A digest arrives in the shape the detail endpoint returns. Before anything is
written it must pass what the admin checks: its topic exists, citation numbers
are unique and every [n] in the text has a reference, every repository named
already exists (POST /repositories/ creates one explicitly), and the workflow
lets the token's user edit it. Every write is one revision in the digest's
history, credited to the token's user. A write runs in one transaction; if it loses
a lock conflict to another write of the same rows, it runs once more
(``publishing.locks``), and if it loses again the client gets a 409 to send it again.
"""
from django.db import transaction
from django.db.models import Q
from django.http import HttpRequest
from django.shortcuts import get_object_or_404
from django.utils.text import slugify
from ninja import Status as HttpStatus
from ninja.errors import HttpError
import reversion

from accounts.models import ApiToken
from api.auth import token_auth
from api.errors import error_responses
from api.responses import require_unchanged, written_json
from api.throttling import throttles
from api.writing import FieldProblems, record_revision, require_write
from publishing.locks import retry_on_lock_conflict
from publishing.workflow import Status

from .citations import check_citations
from .models import ActionItem, Digest, DigestReference, FAQEntry, Reference, Repository, Topic
from .schemas import DigestIn, DigestOut, RepositoryIn, RepositoryOut, StatusIn


WRITE = {"auth": token_auth, "throttle": throttles("write")}
UNKNOWN_REPOSITORY = "Unknown repository “{name}”: create it first with POST /api/v1/repositories/."


def _repositories(payload: DigestIn) -> dict[str, Repository]:
    """The named repositories that exist, keyed by lower-cased owner/name (one query)."""
    names = {c.reference.repository.lower() for c in payload.references}
    names |= {item.repository.lower() for item in payload.action_items if item.repository}
    if not names:
        return {}
    condition = Q()
    for name in names:
        condition |= Q(full_name__iexact=name)
    return {repo.full_name.lower(): repo for repo in Repository.objects.filter(condition)}


def _check_text(payload: DigestIn, problems: FieldProblems) -> None:
    numbers = [citation.number for citation in payload.references]
    duplicates = sorted({n for n in numbers if numbers.count(n) > 1})
    if duplicates:
        problems.add("body.references", f"Citation number [{duplicates[0]}] is used by more than one reference.")
    report = check_citations([payload.summary, payload.body], numbers, plain=tuple(entry.answer for entry in payload.faq))
    if not report.ok:
        problems.add("body.references", report.error_message())


def _resolve_references(payload: DigestIn, repositories, problems: FieldProblems) -> list[Reference | None]:
    """The referenced Reference rows; unknown ones are built (unsaved) when a title is given."""
    resolved, seen = [], set()
    for index, citation in enumerate(payload.references):
        data, path = citation.reference, f"body.references.{index}.reference"
        repository = repositories.get(data.repository.lower())
        if repository is None:
            problems.add(f"{path}.repository", UNKNOWN_REPOSITORY.format(name=data.repository))
            resolved.append(None)
            continue
        reference = Reference.objects.filter(repository=repository, kind=data.kind, key=data.key).first()
        if reference is None:
            if not data.title:
                problems.add(f"{path}.title", "A title is required to create a new reference.")
            fields = data.dict(exclude={"repository", "kind", "key"})
            reference = Reference(repository=repository, kind=data.kind, key=data.key, **fields)
        identity = (repository.pk, data.kind, data.key)
        if identity in seen:
            problems.add(path, "This reference is cited twice; cite it once under one number.")
        seen.add(identity)
        resolved.append(reference)
    return resolved


def _check_action_items(payload: DigestIn, repositories, problems: FieldProblems) -> None:
    for index, item in enumerate(payload.action_items):
        if item.repository and item.repository.lower() not in repositories:
            problems.add(f"body.action_items.{index}.repository", UNKNOWN_REPOSITORY.format(name=item.repository))


def _check_identity(digest: Digest, topic: Topic | None, payload: DigestIn, slug: str, problems) -> None:
    others = Digest.objects.exclude(pk=digest.pk)
    if slug and others.filter(slug=slug).exists():
        problems.add("body.slug", f"Another digest already uses the slug “{slug}”.")
    if topic and others.filter(topic=topic, date=payload.date).exists():
        problems.add("body.date", f"{topic.name} already has a digest for {payload.date}.")


def validate(digest: Digest, payload: DigestIn):
    """Everything the admin would refuse, as one 422 listing every problem."""
    problems = FieldProblems()
    topic = Topic.objects.filter(slug=payload.topic.slug).first()
    if topic is None:
        problems.add("body.topic.slug", f"Unknown topic “{payload.topic.slug}”.")
    slug = payload.slug or (slugify(f"{topic.slug}-{payload.date}") if topic else "")
    _check_identity(digest, topic, payload, slug, problems)
    _check_text(payload, problems)
    repositories = _repositories(payload)
    references = _resolve_references(payload, repositories, problems)
    _check_action_items(payload, repositories, problems)
    problems.raise_if_any()
    return topic, slug, references, repositories


def _replace_related(digest: Digest, payload: DigestIn, references, repositories) -> None:
    digest.digest_references.all().delete()
    digest.action_items.all().delete()
    for citation, reference in zip(payload.references, references):
        if reference.pk is None:
            reference.save()
        DigestReference.objects.create(digest=digest, reference=reference, number=citation.number)
    for item in payload.action_items:
        repository = repositories.get(item.repository.lower()) if item.repository else None
        ActionItem.objects.create(
            digest=digest, position=item.position, text=item.text, repository=repository, priority=item.priority
        )
    if not payload.faq_is_generated:
        digest.faq_entries.all().delete()
        for entry in payload.faq:
            FAQEntry.objects.create(
                digest=digest, position=entry.position, question=entry.question, answer=entry.answer
            )


def save_digest(digest: Digest, payload: DigestIn, token: ApiToken, verb: str) -> Digest:
    topic, slug, references, repositories = validate(digest, payload)
    with transaction.atomic(), reversion.create_revision():
        digest.topic, digest.slug = topic, slug
        for name in ("date", "section", "label", "headline", "summary", "body", "byline", "disclosure"):
            setattr(digest, name, getattr(payload, name))
        digest.note_edit(token.user)  # the editorial record: created / last edited by the token's user
        if digest.pk is None:
            digest.save()
        digest.lock_cited_references(references)
        _replace_related(digest, payload, references, repositories)
        digest.save()
        record_revision(digest, token, verb)
    return Digest.objects.with_page_data().get(pk=digest.pk)


def create_digest(request: HttpRequest, payload: DigestIn):
    """Create a draft digest (write:content)."""
    token = require_write(request, "digests.add_digest")
    digest = retry_on_lock_conflict(lambda: save_digest(Digest(status=Status.DRAFT), payload, token, "Created"))
    return written_json(DigestOut, digest, status=201)


def _locked_digest(request: HttpRequest, slug: str) -> Digest:
    """The digest, locked until the write's transaction ends, if the client's If-Match still matches it."""
    digest = get_object_or_404(Digest.objects.select_for_update(of=("self",)), slug=slug)
    require_unchanged(request, DigestOut, Digest.objects.with_page_data().get(pk=digest.pk))
    return digest


def _editable_digest(request: HttpRequest, token: ApiToken, slug: str) -> Digest:
    digest = _locked_digest(request, slug)
    if not digest.can_edit(token.user):
        raise HttpError(403, "Only Publishers can change a digest that is published or archived.")
    return digest


def _move(digest: Digest, token: ApiToken, status: str, published_at=None) -> Digest:
    with transaction.atomic(), reversion.create_revision():
        digest.transition(token.user, status, published_at=published_at)
        record_revision(digest, token, f"Moved to {Status(status).label}")
    return Digest.objects.with_page_data().get(pk=digest.pk)


def update_digest(request: HttpRequest, slug: str, payload: DigestIn):
    """Replace a digest's content, references, action items and FAQ (write:content)."""
    token = require_write(request, "digests.change_digest")
    return written_json(DigestOut, retry_on_lock_conflict(_update, request, token, slug, payload))


@transaction.atomic
def _update(request: HttpRequest, token: ApiToken, slug: str, payload: DigestIn) -> Digest:
    return save_digest(_editable_digest(request, token, slug), payload, token, "Updated")


def submit_digest(request: HttpRequest, slug: str):
    """Submit a draft for review (write:content)."""
    token = require_write(request, "digests.change_digest")
    return written_json(DigestOut, retry_on_lock_conflict(_submit, request, token, slug))


@transaction.atomic
def _submit(request: HttpRequest, token: ApiToken, slug: str) -> Digest:
    return _move(_editable_digest(request, token, slug), token, Status.IN_REVIEW)


def set_digest_status(request: HttpRequest, slug: str, payload: StatusIn):
    """Publish, schedule, archive or return to draft (publish scope; Publishers only)."""
    token = require_write(request, "digests.change_digest", scope=ApiToken.Scope.PUBLISH)
    return written_json(DigestOut, retry_on_lock_conflict(_set_status, request, token, slug, payload))


@transaction.atomic
def _set_status(request: HttpRequest, token: ApiToken, slug: str, payload: StatusIn) -> Digest:
    return _move(_locked_digest(request, slug), token, payload.status, payload.published_at)


def create_repository(request: HttpRequest, payload: RepositoryIn):
    """Create a repository explicitly, so digests can cite it (write:content)."""
    require_write(request, "digests.add_repository")
    problems = FieldProblems()
    if Repository.objects.filter(full_name__iexact=payload.full_name).exists():
        problems.add("body.full_name", f"“{payload.full_name}” already exists.")
    topic = Topic.objects.filter(slug=payload.topic).first() if payload.topic else None
    if payload.topic and topic is None:
        problems.add("body.topic", f"Unknown topic “{payload.topic}”.")
    problems.raise_if_any()
    repository = Repository.objects.create(
        full_name=payload.full_name, topic=topic, url=payload.url, description=payload.description
    )
    return HttpStatus(201, Repository.objects.select_related("topic").get(pk=repository.pk))


def register(router) -> None:
    """Add the write operations to the app's router (digests/api.py), after its reads, as OpenAPI lists them."""
    created = {201: DigestOut, **error_responses(401, 403, 409)}
    changed = {200: DigestOut, **error_responses(401, 403, 404, 409, 412)}
    router.post("/digests/", response=created, **WRITE)(create_digest)
    router.put("/digests/{slug}", response=changed, **WRITE)(update_digest)
    router.post("/digests/{slug}/submit", response=changed, **WRITE)(submit_digest)
    router.post("/digests/{slug}/status", response=changed, **WRITE)(set_digest_status)
    router.post("/repositories/", response={201: RepositoryOut, **error_responses(401, 403)}, **WRITE)(create_repository)
