"""Feeds of the blog: all posts, one tag, one author; full posts with every author."""
from urllib.parse import quote

from django.db import connections
from django.http import Http404
from django.shortcuts import get_object_or_404
from django.urls import reverse
from django.utils.html import escape, format_html
from taggit.models import Tag

from publishing.compiled import planned_per_run
from publishing.syndication import ReaderFeed, absolute_urls, atom_entry

from .models import Author, Post, author_path


#: What a post feed item prints (``PostsFeed.items``).
FEED_COLUMNS = ("slug", "title", "excerpt", "auto_excerpt", "disclosure", "lead_html", "body_html",
                "authors_tags", "published_at", "updated_at")


def path_maker(name: str):
    """``reverse(name, args=[slug])`` as a function of the slug: one ``reverse`` per feed, not per entry."""
    marker = "slug-marker"
    prefix, _, suffix = reverse(name, args=[marker]).partition(marker)
    return lambda slug: f"{prefix}{quote(slug, safe=SLUG_SAFE)}{suffix}"


#: What ``reverse`` leaves unquoted in a path argument.
SLUG_SAFE = "!$&'()*+,;=/~:@"


class PostsFeed(ReaderFeed):
    """The newest published posts, full bodies, all authors in byline order."""

    title = "RepoJournal posts"
    description = "Long-form writing from RepoJournal."
    #: Plan the items' query for each request's values (a tag's or author's feed: see
    #: ``compiled.planned_per_run``); the feed of all posts may use a prepared statement.
    custom_plans = False

    stored_atom = True

    def link(self):
        return reverse("blog:index")

    def stored_atom_entries(self, items, origin: str):
        """Each post's entry from its stored columns (body HTML, bylines and tags, excerpt): no
        ``reverse()`` per post or author (the paths are built from one reversed prefix each)."""
        post_path, author_url = path_maker("blog:post"), path_maker("blog:author")
        entries, latest = [], None
        for post in items:
            link = origin + post_path(post.slug)
            updated = self.item_updateddate(post)
            latest = max(latest, updated) if latest else updated
            entries.append(atom_entry(
                title=post.title, link=link, published=post.published_at, updated=updated,
                authors=[(author["name"], origin + author_url(author["slug"])) for author in post.authors_tags.get("authors", ())],
                summary=self.item_description(post), categories=self.item_categories(post),
                content=absolute_urls(self.item_content(post), link, origin),
            ))
        return entries, latest

    def posts(self, obj):
        return Post.objects.published()

    def items(self, obj=None):
        """The newest posts, only the columns the feed prints: bylines and tags come from the stored
        ``authors_tags`` (kept true by the signals that re-render cards), so a feed is one query
        instead of three and builds no author or tag instances."""
        posts = self.posts(obj).only(*FEED_COLUMNS)[: self.limit]
        with planned_per_run(connections[posts.db], self.custom_plans):
            return list(posts)

    def item_title(self, item: Post) -> str:
        return item.title

    def item_description(self, item: Post) -> str:
        return escape(item.display_excerpt)  # plain text; the feed field holds HTML

    def item_content(self, item: Post) -> str:
        disclosure = format_html("<p><em>{}</em></p>", item.disclosure) if item.disclosure else ""
        return disclosure + item.lead_html + item.body_html

    def item_authors(self, item: Post) -> list[tuple[str, str]]:
        """Every author in byline order, with their page."""
        return [(author["name"], author_path(author["slug"])) for author in item.authors_tags.get("authors", ())]

    def item_categories(self, item: Post) -> list[str]:
        """The post's tag names, sorted (as the API lists them)."""
        return list(item.authors_tags.get("tags", ()))


class TagFeed(PostsFeed):
    """Published posts with one tag."""

    custom_plans = True

    def get_object(self, request, slug: str):
        tag = get_object_or_404(Tag, slug=slug)
        if not Post.objects.published().tagged_with(tag).exists():
            raise Http404("No published post has this tag.")
        return tag

    def title(self, obj: Tag) -> str:
        return f"Posts tagged {obj.name} — RepoJournal"

    def link(self, obj: Tag) -> str:
        return reverse("blog:tag", args=[obj.slug])

    def posts(self, obj: Tag):
        # By the tag's id, not its slug: PostgreSQL then knows how many posts the tag has and walks the
        # newest posts for a common tag instead of sorting all of them (68 ms -> ~6 ms for the benchmark's
        # popular tag, on 22,500 posts).
        return Post.objects.published().tagged_with(obj)


class AuthorFeed(PostsFeed):
    """Published posts an author wrote or co-wrote."""

    custom_plans = True

    def get_object(self, request, slug: str):
        return get_object_or_404(Author.objects.published(), slug=slug)

    def title(self, obj: Author) -> str:
        return f"Posts by {obj.name} — RepoJournal"

    def link(self, obj: Author) -> str:
        return obj.get_absolute_url()

    def posts(self, obj: Author):
        return Post.objects.published().by_author(obj)
