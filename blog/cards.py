"""A post's listing card, rendered when what it shows changes instead of on every page view.

A card (byline with author links, date, tags, disclosure, excerpt) appears on the
home page, /posts/, tag and author pages and under related posts; the API's post
lists show the same bylines and tags, stored beside it as ``Post.authors_tags``. Rendering it on
each request took most of those pages' time (a template include per author and
tag, a reverse() per link, the excerpt cut from the body's HTML), so it is
rendered once into ``Post.card_html`` -- like ``body_html`` -- and listings print
it as stored. The heading stays in the listing template because its level depends
on the page.

What a card shows changes when the post is saved (``Post.save`` renders it), when
its bylines or tags change (taggit's add/remove/clear save and delete TaggedPost
rows one by one, so their signals cover them: the handlers in ``blog/signals.py`` re-render the post
concerned in the same transaction, so the page-cache invalidation that runs on commit covers it), and
when one of its authors or tags is renamed: an author may have thousands of posts, so the rename
only records a ``PostRerender`` row and a worker re-renders them (``refresh_after_rename``,
``publishing.rerenders``). Rendering uses the
templates as they are, so after changing ``blog/post_card.html`` run
``manage.py refresh_cards``.
"""
from django.db import transaction
from django.template.loader import render_to_string

from publishing import social_cards
from publishing.signals import announce_bulk_write
from publishing.structured_data import blog_posting

CARD_TEMPLATE = "blog/post_card.html"
HEADER_TEMPLATE = "blog/post_header.html"
#: The fields render_parts() sets.
PARTS = ("card_html", "header_html", "posting", "authors_tags")
#: Posts re-rendered per query and write when an author or tag used by many posts changes.
REFRESH_BATCH = 500
#: Posts a worker locks, re-renders and redraws at a time after a rename: an editor saving one of them
#: waits for one batch at most.
RENAME_BATCH = 100
#: What drawing a post's og:image reads (``Post.draw_social_card``).
SOCIAL_CARD_FIELDS = ("title", "published_at", "authors_tags", "social_card", "slug", "lead_image")


def render_card(post) -> str:
    """The card of `post` as HTML; reads its bylines and tags (prefetched or not)."""
    return render_to_string(CARD_TEMPLATE, {"post": post})


def authors_tags(post) -> dict:
    """The byline and tags as the API's post lists show them (``PostListOut.authors`` and
    ``.tags``): authors in byline order, tag names sorted."""
    return {
        "authors": [
            {"slug": author.slug, "name": author.name, "handle": author.handle} for author in post.ordered_authors()
        ],
        "tags": sorted({tag.name for tag in post.ordered_tags()}),
    }


def render_parts(post) -> None:
    """Set everything stored about `post` that shows its bylines and tags: the listing card, the
    post page's header (byline, tags, disclosure), its BlogPosting JSON-LD and the API lists' authors
    and tags."""
    post.card_html = render_card(post)
    post.header_html = render_to_string(HEADER_TEMPLATE, {"post": post})
    post.posting = blog_posting(post)
    post.authors_tags = authors_tags(post)


def refresh_cards(queryset, *, body: bool = False) -> int:
    """Re-render and store the cards of the posts in `queryset` (and, with `body`, their body and lead
    image HTML, plain-text excerpt and word count); returns how many posts were rendered.

    Writes with ``bulk_update``, so ``updated_at`` (the API's change marker) stays as it was.
    """
    Post = queryset.model
    fields = [*PARTS, *(["body_html", "lead_html", "auto_excerpt", "word_count", "meta_description"] if body else [])]
    ids = list(queryset.order_by().values_list("pk", flat=True).distinct())
    for start in range(0, len(ids), REFRESH_BATCH):
        posts = list(Post.objects.filter(pk__in=ids[start : start + REFRESH_BATCH]).with_reader_data())
        for post in posts:
            if body:
                post.render_body()
            render_parts(post)
        Post.objects.bulk_update(posts, fields)
    return len(ids)


def draw_social_cards(posts) -> list[int]:
    """Redraw the og:image cards of `posts` whose byline changed (their stored parts first); returns the drawn ids."""
    return social_cards.draw_each(posts.only(*SOCIAL_CARD_FIELDS))


def refresh_after_rename(posts, claim, *, social: bool) -> int:
    """A worker's part of a rename (``publishing.rerenders``): re-render the stored parts of `posts`, and with
    `social` redraw their og:image cards (the byline shows an author's name, not the tags); returns how many.

    A batch at a time: its rows are locked while they are read and written, so of two workers re-rendering the
    same post (an author renamed twice, a tag renamed meanwhile) the later reads what the earlier wrote.
    A card is drawn before the row names it, so a page never links a card not drawn yet. The caches hear
    of each batch once it is done (``announce_bulk_write``); `claim` is renewed after each.
    """
    Post = posts.model
    ids = list(posts.order_by("pk").values_list("pk", flat=True).distinct())
    for start in range(0, len(ids), RENAME_BATCH):
        batch = ids[start : start + RENAME_BATCH]
        with transaction.atomic():
            list(Post.objects.filter(pk__in=batch).order_by("pk").select_for_update().values_list("pk", flat=True))
            refresh_cards(Post.objects.filter(pk__in=batch))
        if social:
            draw_social_cards(Post.objects.filter(pk__in=batch))
        announce_bulk_write(Post, batch)
        claim.renew()
    return len(ids)
