"""The blog over the API: posts, authors and tags.

Reads go through ``visible()`` (published only, unless the token may read
drafts); writes live in ``blog.api_writes`` and obey the same rules as the admin.
"""
from django.db.models import F
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404
from ninja import Query, Router
from taggit.models import Tag

from api.compiled import is_unfiltered, paginate_unfiltered
from api.auth import PUBLIC, visible, with_status
from api.errors import error_responses
from api.pagination import Page, paginate
from api.responses import conditional_json, list_response, moment_text, set_list_caching, url_maker
from api.throttling import throttles

from . import api_writes
from .models import Author, Post, PostAuthor, TaggedPost
from .schemas import AuthorFilters, AuthorOut, PostFilters, PostListOut, PostOut, TagFilters, TagOut

router = Router(tags=["Blog"])

LIST = {**PUBLIC, "throttle": throttles("list")}
DETAIL_RESPONSES = {304: None, **error_responses(401, 404, 412)}


@router.get("/posts/", response={200: Page[PostListOut], **error_responses(401, 403)}, **LIST)
def list_posts(request: HttpRequest, response: HttpResponse, filters: Query[PostFilters]):
    """Posts, oldest change first. Filters combine with AND; repeated `tag` must all match."""
    if is_unfiltered(request):
        page = paginate_unfiltered(request, Post, filters, fields=POST_LIST_FIELDS)
        page["items"] = post_list_items(page["items"])
        return list_response(request, page)
    posts = visible(request, Post.objects.all())
    if filters.tag:
        posts = with_all_tags(posts, filters.tag)
    if filters.author:
        author = Author.objects.filter(slug=filters.author).values_list("pk", flat=True).first()
        posts = posts.filter(pk__in=PostAuthor.objects.filter(author_id=author).values("post_id"))
    if filters.date_from:
        posts = posts.filter(published_at__date__gte=filters.date_from)
    if filters.date_to:
        posts = posts.filter(published_at__date__lte=filters.date_to)
    keys, fields = ("updated_at", "id"), POST_LIST_FIELDS
    if filters.q:
        posts, ranked = posts.search(filters.q)
        if ranked:  # best match first, then newest id, as the site ranks: the cursor follows (-rank, -id)
            posts = posts.annotate(search_order=-F("search_rank"), search_id=-F("id"))
            keys, fields = ("search_order", "search_id"), (*POST_LIST_FIELDS, "search_order", "search_id")
    posts = with_status(request, posts, filters.status)
    page = paginate(request, posts, filters, keys=keys, fields=fields, count_in_page=True)
    page["items"] = post_list_items(page["items"])
    return list_response(request, page)


def with_all_tags(posts, slugs: list[str]):
    """Posts carrying every one of these tags, filtered by tag id rather than by slug.

    With the id a literal in the query, PostgreSQL knows how many posts carry
    the tag: for a common one it walks the (updated_at, id) index and stops after
    a page, for a rare one it starts from the tag's few posts. Through a join on
    the slug it guessed a few dozen either way and sorted every post of a tag on
    45% of the archive (~0.5 s).
    """
    tag_ids = dict(Tag.objects.filter(slug__in=slugs).values_list("slug", "pk"))
    if len(tag_ids) < len(set(slugs)):
        return posts.none()
    for tag_id in tag_ids.values():
        posts = posts.filter(pk__in=TaggedPost.objects.filter(tag_id=tag_id).values("content_object_id"))
    return posts


#: What PostListOut shows: display_excerpt is the excerpt or the stored auto_excerpt, and the byline
#: and tags are stored with the post (blog/cards.py); bodies stay in the database.
POST_LIST_FIELDS = (
    "id", "slug", "title", "excerpt", "auto_excerpt", "disclosure", "authors_tags", "status", "published_at",
    "updated_at",
)


def post_list_items(rows: list[dict]) -> list[dict]:
    """PostListOut items from ``.values()`` rows: no model instances, no query per byline or tag
    (``Post.authors_tags`` holds them, kept true by the signals that re-render cards); times as the
    text the renderer would write."""
    url = url_maker("blog:post")
    return [
        {
            "id": row["id"], "slug": row["slug"], "url": url(row["slug"]), "title": row["title"],
            "excerpt": row["excerpt"], "display_excerpt": row["excerpt"] or row["auto_excerpt"],
            "disclosure": row["disclosure"], "authors": row["authors_tags"]["authors"],
            "tags": row["authors_tags"]["tags"], "status": row["status"],
            "published_at": moment_text(row["published_at"]), "updated_at": moment_text(row["updated_at"]),
        }
        for row in rows
    ]


@router.get("/posts/{slug}", response={200: PostOut, **DETAIL_RESPONSES}, **PUBLIC)
def get_post(request: HttpRequest, slug: str):
    """One post with its ordered authors and tags, as Markdown and as HTML."""
    post = get_object_or_404(visible(request, Post.objects.all()).with_listing_data(), slug=slug)
    stamps = [post.updated_at] + [author.updated_at for author in post.ordered_authors()]
    stamps += post.image_uses.values_list("image__updated_at", flat=True)  # their renditions and alt text show
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


api_writes.register(router)
