"""Writing posts over the API, under the admin's rules.

A post arrives in the shape the detail endpoint returns; its authors must
already exist (POST /authors/ creates one explicitly), tags are created on
first use as in the admin, and the workflow decides who may edit or publish.
Every write is one revision in the post's history, credited to the token's user.
A write runs in one transaction; if it loses a lock conflict to another write of the
same rows, it runs once more (``publishing.locks``), then the client gets a 409.
"""
from django.apps import apps
from django.core.exceptions import ValidationError
from django.db import transaction
from django.http import HttpRequest
from django.shortcuts import get_object_or_404
from ninja import Status as HttpStatus
from ninja.errors import HttpError
import reversion

from accounts.models import ApiToken
from api.auth import token_auth
from api.errors import error_responses
from api.responses import require_unchanged, written_json
from api.throttling import throttles
from api.writing import FieldProblems, record_revision, require_write
from images.models import Image
from publishing.locks import retry_on_lock_conflict
from publishing.workflow import Status

from .models import Author, Post, PostAuthor
from .schemas import AuthorOut, NewAuthorIn, PostIn, PostOut, StatusIn


WRITE = {"auth": token_auth, "throttle": throttles("write")}


def validate(post: Post, payload: PostIn) -> list[Author]:
    problems = FieldProblems()
    if Post.objects.exclude(pk=post.pk).filter(slug=payload.slug).exists():
        problems.add("body.slug", f"Another post already uses the slug “{payload.slug}”.")
    slugs = [author.slug for author in payload.authors]
    found = {author.slug: author for author in Author.objects.filter(slug__in=slugs)}
    for index, slug in enumerate(slugs):
        if slug not in found:
            problems.add(f"body.authors.{index}.slug", f"Unknown author “{slug}”: create it first with POST /authors/.")
        elif slugs.index(slug) != index:
            problems.add(f"body.authors.{index}.slug", f"“{slug}” is already in the byline.")
    if not slugs and post.status == Status.PUBLISHED:  # check_publishable's rule, kept by every later edit
        problems.add("body.authors", "A published or scheduled post keeps a byline: name at least one author.")
    if payload.lead_image and not Image.objects.filter(pk=payload.lead_image.id).exists():
        problems.add("body.lead_image.id", f"No image has the id {payload.lead_image.id}: upload it in the admin first.")
    problems.raise_if_any()
    return [found[slug] for slug in slugs]


def save_post(post: Post, payload: PostIn, token: ApiToken, verb: str) -> Post:
    authors = validate(post, payload)
    with transaction.atomic(), reversion.create_revision():
        for name in ("title", "slug", "body", "excerpt", "disclosure"):
            setattr(post, name, getattr(payload, name))
        post.lead_image_id = payload.lead_image.id if payload.lead_image else None
        post.note_edit(token.user)  # the editorial record: created / last edited by the token's user
        post.save()
        post.post_authors.all().delete()
        for position, author in enumerate(authors):
            PostAuthor.objects.create(post=post, author=author, position=position)
        post.tags.set(payload.tags)
        post.save()
        record_revision(post, token, verb)
    return Post.objects.with_listing_data().get(pk=post.pk)


def _locked_post(request: HttpRequest, slug: str) -> Post:
    """The post, locked until the write's transaction ends, if the client's If-Match still matches it."""
    post = get_object_or_404(Post.objects.select_for_update(of=("self",)), slug=slug)
    require_unchanged(request, PostOut, Post.objects.with_listing_data().get(pk=post.pk))
    return post


def _editable_post(request: HttpRequest, token: ApiToken, slug: str) -> Post:
    post = _locked_post(request, slug)
    if not post.can_edit(token.user):
        raise HttpError(403, "Only Publishers can change a post that is published or archived.")
    return post


def _move(post: Post, token: ApiToken, status: str, published_at=None) -> Post:
    with transaction.atomic(), reversion.create_revision():
        post.transition(token.user, status, published_at=published_at)
        record_revision(post, token, f"Moved to {Status(status).label}")
    return Post.objects.with_listing_data().get(pk=post.pk)


def create_post(request: HttpRequest, payload: PostIn):
    """Create a draft post (write:content)."""
    token = require_write(request, "blog.add_post")
    post = retry_on_lock_conflict(lambda: save_post(Post(status=Status.DRAFT), payload, token, "Created"))
    return written_json(PostOut, post, status=201)


def update_post(request: HttpRequest, slug: str, payload: PostIn):
    """Replace a post's text, byline and tags (write:content)."""
    token = require_write(request, "blog.change_post")
    return written_json(PostOut, retry_on_lock_conflict(_update, request, token, slug, payload))


@transaction.atomic
def _update(request: HttpRequest, token: ApiToken, slug: str, payload: PostIn) -> Post:
    return save_post(_editable_post(request, token, slug), payload, token, "Updated")


def submit_post(request: HttpRequest, slug: str):
    """Submit a draft for review (write:content)."""
    token = require_write(request, "blog.change_post")
    return written_json(PostOut, retry_on_lock_conflict(_submit, request, token, slug))


@transaction.atomic
def _submit(request: HttpRequest, token: ApiToken, slug: str) -> Post:
    return _move(_editable_post(request, token, slug), token, Status.IN_REVIEW)


def set_post_status(request: HttpRequest, slug: str, payload: StatusIn):
    """Publish, schedule, archive or return to draft (publish scope; Publishers only)."""
    token = require_write(request, "blog.change_post", scope=ApiToken.Scope.PUBLISH)
    return written_json(PostOut, retry_on_lock_conflict(_set_status, request, token, slug, payload))


@transaction.atomic
def _set_status(request: HttpRequest, token: ApiToken, slug: str, payload: StatusIn) -> Post:
    return _move(_locked_post(request, slug), token, payload.status, payload.published_at)


def create_author(request: HttpRequest, payload: NewAuthorIn):
    """Create an author explicitly, so posts can name them (write:content)."""
    require_write(request, "blog.add_author")
    problems = FieldProblems()
    if Author.objects.filter(slug=payload.slug).exists():
        problems.add("body.slug", f"An author with the slug “{payload.slug}” already exists.")
    try:  # one namespace of fediverse handles (issue 38); the app registry, as the admin's form reaches it
        apps.get_app_config("fediverse").check_handle(payload.handle or "")
    except ValidationError as refused:
        problems.add("body.handle", " ".join(refused.messages))
    problems.raise_if_any()
    return HttpStatus(201, Author.objects.create(**payload.dict()))


def register(router) -> None:
    """Add the write operations to the app's router (blog/api.py), after its reads, as OpenAPI lists them."""
    created = {201: PostOut, **error_responses(401, 403, 409)}
    changed = {200: PostOut, **error_responses(401, 403, 404, 409, 412)}
    router.post("/posts/", response=created, **WRITE)(create_post)
    router.put("/posts/{slug}", response=changed, **WRITE)(update_post)
    router.post("/posts/{slug}/submit", response=changed, **WRITE)(submit_post)
    router.post("/posts/{slug}/status", response=changed, **WRITE)(set_post_status)
    router.post("/authors/", response={201: AuthorOut, **error_responses(401, 403)}, **WRITE)(create_author)
