"""Reader pages of the blog. Public views reach posts only through published()."""
from django.contrib.admin.views.decorators import staff_member_required
from django.http import Http404
from django.shortcuts import get_object_or_404, render
from django.utils import timezone
from taggit.models import Tag

from publishing import social_cards
from publishing.compiled import Statement
from publishing.context_processors import navigation
from publishing.pagination import Listing
from publishing.shown import shows
from publishing.syndication import feed_links

from .models import Author, Post, PostCard

RELATED_POSTS = 3

# Reader listings and their lookups, compiled once per process (publishing.compiled): building
# these queries through the ORM cost more CPU than the database spent answering them.
_published_at = Post._meta.get_field("published_at")
# A tag's or author's posts are planned for each run (custom_plans): tags and authors range from
# a handful of posts to half the archive, and the best plan changes with that (compiled.planned_per_run).
POSTS = Listing(lambda now: Post.objects.published(now).cards(), now=_published_at)
TAGGED = Listing(lambda now, tag: Post.objects.published(now).cards().tagged_with(tag),
                 custom_plans=True, now=_published_at, tag=Tag._meta.pk)
BY_AUTHOR = Listing(lambda now, author: Post.objects.published(now).cards().by_author(author),
                    custom_plans=True, now=_published_at, author=Author._meta.pk)
#: What ``get_object_or_404(Tag, slug=slug)`` runs.
TAG = Statement(lambda slug: Tag.objects.filter(slug=slug).order_by()[:21], slug=Tag._meta.get_field("slug"))
AUTHOR = Statement(lambda slug: Author.objects.filter(slug=slug).order_by()[:21],
                   slug=Author._meta.get_field("slug"))


def site_links(request) -> dict[str, str]:
    """The navigation's URLs (home, posts, tags...), reversed once per process by the context processor."""
    return navigation(request)["links"]


def posts_crumbs(request, name: str, url: str) -> list[tuple[str, str]]:
    links = site_links(request)
    return [("Home", links["home"]), ("Posts", links["posts"]), (name, url)]


def render_post(request, post: Post, *, preview: bool = False):
    related = Post.objects.related_cards(post, RELATED_POSTS)
    shows(request, post, related)
    return render(
        request,
        "blog/post_detail.html",
        {
            "post": post,
            "related": related,
            "preview": preview,
            "preview_status": post.display_status,
            "breadcrumbs": posts_crumbs(request, post.title, post.get_absolute_url()),
        },
    )


def post_card(request, slug: str, key: str):
    """A published post's og:image at its fingerprinted URL (``publishing.social_cards``)."""
    post = get_object_or_404(Post.objects.published().only("slug", "social_card"), slug=slug)
    shows(request, post)
    return social_cards.serve(PostCard, post, key, post.social_card_url)


def post_detail(request, slug: str):
    # Bylines, tags and JSON-LD come stored with the row (blog/cards.py): one query, no prefetch.
    post = get_object_or_404(Post.objects.published().for_page(), slug=slug)
    return render_post(request, post)


@staff_member_required
def post_preview(request, pk: int):
    """Staff see any post, whatever its status, exactly as readers will."""
    return render_post(request, get_object_or_404(Post.objects.for_page(), pk=pk), preview=True)


def post_index(request):
    """Recent Posts: every published post, newest first."""
    page = POSTS.page(request, now=timezone.now())
    shows(request, page)
    return render(
        request,
        "blog/post_index.html",
        {
            "page": page,
            "feeds": feed_links("RepoJournal posts", "blog:feed"),
        },
    )


def tag_index(request):
    """Every tag of a published post, with how many published posts carry it."""
    return render(request, "blog/tag_index.html", {"tags": Post.objects.published().tag_counts()})


def tag_detail(request, slug: str):
    tag = TAG.get_or_404(slug=slug)
    page = TAGGED.page(request, now=timezone.now(), tag=tag.pk)
    if not page.object_list:
        raise Http404("No published post has this tag.")
    shows(request, tag, page)
    links = site_links(request)
    return render(
        request,
        "blog/tag_detail.html",
        {
            "tag": tag,
            "page": page,
            "feeds": feed_links(f"Posts tagged {tag.name}", "blog:tag_feed", tag.slug),
            "breadcrumbs": [("Home", links["home"]), ("Tags", links["tags"]), (tag.name, request.path)],
        },
    )


def author_detail(request, slug: str):
    """An author's bio and every published post they wrote or co-wrote."""
    author = AUTHOR.get_or_404(slug=slug)
    page = BY_AUTHOR.page(request, now=timezone.now(), author=author.pk)
    if not page.object_list:
        raise Http404("This author has no published post.")
    shows(request, author, page)
    return render(
        request,
        "blog/author_detail.html",
        {
            "author": author,
            "page": page,
            "feeds": feed_links(f"Posts by {author.name}", "blog:author_feed", author.slug),
            "breadcrumbs": posts_crumbs(request, author.name, author.get_absolute_url()),
        },
    )
