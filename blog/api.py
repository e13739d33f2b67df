"""The blog over the API: posts, authors and tags.

Reads go through ``visible()`` (published only, unless the token may read
drafts); writes live in ``blog.api_writes`` and obey the same rules as the admin.
"""
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404
from ninja import Query, Router

from repojournal.api_tools import (
    PUBLIC, Page, conditional_json, error_responses, paginate, set_list_caching,
    throttles, visible, with_status,
)

from .models import Author, Post
from .schemas import AuthorFilters, AuthorOut, PostFilters, PostListOut, PostOut, TagFilters, TagOut

router = Router(tags=["Blog"])

LIST = {**PUBLIC, "throttle": throttles("list")}
DETAIL_RESPONSES = {304: None, **error_responses(401, 404, 412)}


@router.get("/posts/", response={200: Page[PostListOut], **error_responses(401, 403)}, **LIST)
def list_posts(request: HttpRequest, response: HttpResponse, filters: Query[PostFilters]):
    """Posts, oldest change first. Filters combine with AND; repeated `tag` must all match."""
    posts = visible(request, Post.objects.all()).with_listing_data()
    if filters.tag:
        posts = posts.tagged_with_all(filters.tag)
    if filters.author:
        posts = posts.filter(post_authors__author__slug=filters.author)
    if filters.date_from:
        posts = posts.filter(published_at__date__gte=filters.date_from)
    if filters.date_to:
        posts = posts.filter(published_at__date__lte=filters.date_to)
    if filters.q:
        posts = posts.matching(filters.q)
    posts = with_status(request, posts, filters.status)
    set_list_caching(request, response)
    return paginate(request, posts, filters)


@router.get("/posts/{slug}", response={200: PostOut, **DETAIL_RESPONSES}, **PUBLIC)
def get_post(request: HttpRequest, slug: str):
    """One post with its ordered authors and tags, as Markdown and as HTML."""
    post = get_object_or_404(visible(request, Post.objects.all()).with_listing_data(), slug=slug)
    stamps = [post.updated_at] + [author.updated_at for author in post.ordered_authors()]
    return conditional_json(request, PostOut, post, max(stamps), post.is_published)


@router.get("/authors/", response={200: Page[AuthorOut], **error_responses(401)}, **LIST)
def list_authors(request: HttpRequest, response: HttpResponse, filters: Query[AuthorFilters]):
    """Authors of posts you can see."""
    set_list_caching(request, response)
    return paginate(request, visible(request, Author.objects.all()), filters)


@router.get("/tags/", response={200: Page[TagOut], **error_responses(401)}, **LIST)
def list_tags(request: HttpRequest, response: HttpResponse, filters: Query[TagFilters]):
    """Tags with the number of posts you can see carrying them, in id order.

    Tags have no timestamp: `updated_since` returns the tags of posts changed
    since then, whose counts may have moved.
    """
    posts = visible(request, Post.objects.all())
    if filters.updated_since:
        posts = posts.filter(updated_at__gte=filters.updated_since)
    set_list_caching(request, response)
    return paginate(request, posts.tags_with_counts(), filters, keys=("id",), updated_field=None)


# The write operations register themselves on this router.
from . import api_writes  # noqa: E402,F401
