"""The blog: long-form posts with ordered authors and tags."""
import html

import re

from django.conf import settings
import reversion
from django.core.validators import RegexValidator
from django.contrib.contenttypes.fields import GenericRelation
from django.db import connections, models
from django.urls import reverse
from django.utils import timezone
from django.utils.formats import date_format
from django.utils.html import strip_tags
from django.utils.text import Truncator
from taggit.managers import TaggableManager
from taggit.models import TaggedItemBase

from images.models import Image, ImageUse, record_uses
from images.renditions import open_fallback
from publishing import rerenders, social_cards
from publishing.rendering import cut_at_word, describe, image_ids, render_image, render_markdown
from publishing.search import full_text
from publishing.workflow import (
    EDITORIAL_RECORD_FIELDS, PublishableModel, PublishableQuerySet, Status, WorkflowError, editorial_indexes,
)

from .cards import PARTS, render_parts

EXCERPT_WORDS = 60
#: Newest posts per tag considered when ranking related posts (see PostQuerySet.related_to).
RELATED_CANDIDATES = 30
#: Related posts on PostgreSQL, ranked in one statement (see PostQuerySet.related_cards). The newest
#: posts of each of the post's tags are the candidates (a LATERAL join reads them from the (tag, post)
#: index); each published candidate is ranked by how many of the post's tags it carries, then newest.
RELATED_CARDS_SQL = """
    WITH own AS (SELECT tag_id FROM blog_taggedpost WHERE content_object_id = %(post)s),
    candidates AS (
        SELECT DISTINCT newest.content_object_id AS id FROM own
        CROSS JOIN LATERAL (
            SELECT tagged.content_object_id FROM blog_taggedpost tagged
            WHERE tagged.tag_id = own.tag_id ORDER BY tagged.content_object_id DESC LIMIT %(per_tag)s
        ) newest
        WHERE newest.content_object_id <> %(post)s
    )
    SELECT post.id, post.published_at, post.card_html,
        (SELECT count(*) FROM blog_taggedpost shared
         WHERE shared.content_object_id = post.id AND shared.tag_id IN (SELECT tag_id FROM own)) AS shared_tags
    FROM candidates JOIN blog_post post ON post.id = candidates.id
    WHERE post.status = %(published)s AND post.published_at <= %(now)s
    ORDER BY shared_tags DESC, post.published_at DESC, post.id DESC
    LIMIT %(limit)s
"""
#: Searched fields and their weights (the migrations store frozen copies: PostgreSQL's ``search_vector``,
#: SQLite's FTS5 index).
SEARCH_FIELDS = {"title": "A", "excerpt": "B", "body": "C"}
#: Silent reading speed used for "N min read".
WORDS_PER_MINUTE = 230
#: An image's caption in rendered HTML: not the post's words (excerpt, word count).
FIGCAPTION = re.compile(r"<figcaption>.*?</figcaption>", re.S)



class AuthorQuerySet(models.QuerySet):
    def published(self):
        """Authors with at least one published post; others would only reveal drafts."""
        return self.filter(pk__in=PostAuthor.objects.filter(post__in=Post.objects.published()).values("author_id"))


def author_path(slug: str) -> str:
    """An author's page, from the slug alone (feeds print bylines from stored slugs)."""
    return reverse("blog:author", args=[slug])


#: ``@user@server``: what the post page's ``fediverse:creator`` meta names (Mastodon credits it on previews).
fediverse_address_validator = RegexValidator(
    r"^@[A-Za-z0-9_.-]{1,64}@(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?\.)+[A-Za-z]{2,63}$",
    "Enter a fediverse address as @user@server, e.g. @ezyang@mastodon.social.",
)


class Author(models.Model):
    """Someone who writes for the blog; may or may not have a site account."""

    name = models.CharField(max_length=120)
    handle = models.CharField(
        max_length=60, blank=True, help_text="GitHub-style handle without the @, e.g. ezyang. Optional."
    )
    bio = models.TextField(blank=True)
    fediverse_address = models.CharField(
        max_length=200, blank=True, validators=[fediverse_address_validator],
        help_text="Their own fediverse account as @user@server, e.g. @ezyang@mastodon.social. Optional: "
        "post pages then name it (fediverse:creator), so Mastodon credits them on link previews.",
    )
    user = models.OneToOneField(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="author"
    )
    slug = models.SlugField(max_length=140, unique=True)
    updated_at = models.DateTimeField(auto_now=True)

    objects = AuthorQuerySet.as_manager()

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return f"{self.name} (@{self.handle})" if self.handle else self.name

    def get_absolute_url(self) -> str:
        return author_path(self.slug)


class TaggedPost(TaggedItemBase):
    """The taggit through model, so tag queries join an indexed table of our own."""

    content_object = models.ForeignKey("Post", on_delete=models.CASCADE, related_name="tagged_items")

    class Meta:
        # A tag's posts are read from this index alone (no visit to the table).
        indexes = [models.Index(fields=["tag", "content_object"], name="taggedpost_tag_post")]


class PostQuerySet(PublishableQuerySet):
    def draw_missing_social_cards(self, seconds: float = social_cards.SWEEP_SECONDS) -> int:
        """Draw the og:image cards these posts lack (written in bulk); ``social_cards.draw_missing``."""
        return social_cards.draw_missing(self, PostCard, seconds)

    def with_listing_data(self):
        """Everything a listing shows (ordered authors, tags) in a fixed number of queries."""
        return self.prefetch_related(
            models.Prefetch("post_authors", queryset=PostAuthor.objects.select_related("author")),
            "tags",
        )

    def search(self, query: str):
        """Posts matching a reader's query as the site search matches them (``publishing.search``):
        ranked full text on PostgreSQL, every (stemmed) word in the FTS5 index on SQLite. Returns
        ``(posts, ranked)``; the posts carry ``search_rank`` (higher is better; 0 when not ``ranked``)."""
        return full_text(self, query)

    def tags_with_counts(self):
        """Tag objects of these posts, each annotated with ``post_count`` (posts of this queryset only)."""
        from taggit.models import Tag

        return Tag.objects.filter(blog_taggedpost_items__content_object__in=self).annotate(
            post_count=models.Count("blog_taggedpost_items", distinct=True)
        )

    def with_reader_data(self):
        """What reader pages and feeds show: byline order and tags in the order they were given."""
        return self.prefetch_related(
            models.Prefetch("post_authors", queryset=PostAuthor.objects.select_related("author")),
            models.Prefetch("tagged_items", queryset=TaggedPost.objects.select_related("tag").order_by("id")),
        )

    def tagged(self, slug: str):
        return self.filter(pk__in=TaggedPost.objects.filter(tag__slug=slug).values("content_object_id"))

    def by_author(self, author: "Author"):
        """Posts in whose byline the author appears, first or co-author."""
        return self.filter(pk__in=PostAuthor.objects.filter(author=author).values("post_id"))

    def related_to(self, post: "Post"):
        """Other posts ranked by how many tags they share with `post`, then newest first (every candidate).

        Every post sharing a tag competes, so this is for small archives and
        tests; reader pages use ``related_cards``, which bounds the candidates.
        """
        own_tags = TaggedPost.objects.filter(content_object_id=post.pk).values("tag_id")
        return (
            self.exclude(pk=post.pk)
            .filter(pk__in=TaggedPost.objects.filter(tag_id__in=own_tags).values("content_object_id"))
            .annotate(shared_tags=models.Count("tagged_items", filter=models.Q(tagged_items__tag_id__in=own_tags)))
            .order_by("-shared_tags", "-published_at", "-id")
        )

    def related_cards(self, post: "Post", limit: int) -> list["Post"]:
        """The `limit` published posts most related to `post` (``related_to``'s order), with their cards.

        Only the newest RELATED_CANDIDATES posts of each of its tags compete: a tag
        on half the archive would otherwise make every post page count tags over
        tens of thousands of posts. On PostgreSQL this is one hand-written
        statement (RELATED_CARDS_SQL): its LATERAL join has no ORM spelling, and
        building the equivalent ORM query cost more CPU than running it. SQLite
        has no LATERAL, so there every post sharing a tag competes (SQLite
        databases are small). One query either way.
        """
        if connections[self.db].vendor != "postgresql":
            return list(self.published().cards().related_to(post)[:limit])
        params = {"post": post.pk, "per_tag": RELATED_CANDIDATES, "published": Status.PUBLISHED,
                  "now": timezone.now(), "limit": limit}
        return list(self.raw(RELATED_CARDS_SQL, params))

    def tagged_with(self, tag):
        return self.filter(pk__in=TaggedPost.objects.filter(tag=tag).values("content_object_id"))

    def cards(self):
        """Just what a listing prints (the stored card) and its sort key."""
        return self.only("card_html", "published_at")

    def for_page(self):
        """What a post page prints (its stored parts, JSON-LD, social card and status), not the Markdown
        source, the card, the derived text or the editorial record: each column loaded is compiled
        and converted on every uncached page."""
        return self.only(
            "slug", "title", "status", "published_at", "updated_at", "header_html", "lead_html", "body_html",
            "meta_description", "posting", "authors_tags", "social_card",
        )

    def tag_counts(self):
        """Each tag used by these posts with how many of them use it, most used first."""
        return (
            TaggedPost.objects.filter(content_object__in=self)
            .values("tag__name", "tag__slug")
            .annotate(count=models.Count("content_object", distinct=True))
            .order_by("-count", "tag__name")
        )


class Post(PublishableModel):
    """A long-form article; its body is Markdown rendered once, on save, to sanitised HTML."""

    publish_permission = "blog.publish_post"

    title = models.CharField(max_length=300)
    slug = models.SlugField(max_length=200, unique=True)
    body = models.TextField(help_text="Markdown (CommonMark, tables, fenced code).")
    body_html = models.TextField(blank=True, editable=False)
    excerpt = models.TextField(
        blank=True, help_text="Shown in listings. Leave empty to use the start of the body."
    )
    auto_excerpt = models.TextField(
        blank=True, editable=False, help_text="The body's first words as plain text, kept for listings."
    )
    word_count = models.PositiveIntegerField(default=0, editable=False)
    meta_description = models.CharField(
        max_length=200, blank=True, editable=False,
        help_text="The excerpt (or the body's start) as plain text cut at a word: the page's meta description.",
    )
    card_html = models.TextField(
        blank=True, editable=False, help_text="The listing card, rendered on save (see blog/cards.py)."
    )
    header_html = models.TextField(blank=True, editable=False, help_text="The post page's byline, tags, disclosure.")
    posting = models.JSONField(default=dict, editable=False, help_text="BlogPosting JSON-LD without dateModified.")
    authors_tags = models.JSONField(
        default=dict, editable=False,
        help_text="Authors (slug, name, handle; byline order) and tag names (sorted), as API lists show them.",
    )
    disclosure = models.CharField(
        max_length=300, blank=True,
        help_text="Optional line shown above the post, e.g. how it was drafted.",
    )
    social_card = models.CharField(
        max_length=16, blank=True, editable=False,
        help_text="Fingerprint of the stored og:image card (PostCard), part of its URL; drawn on save.",
    )
    lead_image = models.ForeignKey(
        Image, null=True, blank=True, on_delete=models.SET_NULL, related_name="+",
        help_text="Shown above the body, in feeds, and on the post's social card (og:image).",
    )
    lead_html = models.TextField(blank=True, editable=False, help_text="The lead image's <figure>, rendered on save.")
    image_uses = GenericRelation(ImageUse, related_query_name="post")
    authors = models.ManyToManyField(Author, through="PostAuthor", related_name="posts")
    tags = TaggableManager(through=TaggedPost, blank=True)

    objects = PostQuerySet.as_manager()

    #: Fields save() computes from the others.
    DERIVED_FIELDS = ("body_html", "lead_html", "auto_excerpt", "word_count", "meta_description", *PARTS)

    class Meta:
        ordering = ["-published_at", "-id"]
        get_latest_by = "published_at"
        permissions = [("publish_post", "Can approve, publish, schedule and archive posts")]
        indexes = [
            # Reader listings walk published posts newest first and stop after a page.
            models.Index(
                fields=["-published_at", "-id"], name="post_published_order",
                condition=models.Q(status="published"),
            ),
            # API lists page through (updated_at, id) with a keyset cursor.
            models.Index(fields=["updated_at", "id"], name="post_updated_order"),
            # The admin's list in its default order, every status: a page is a walk of this index.
            models.Index(fields=["-published_at", "-id"], name="post_admin_order"),
            *editorial_indexes("post"),  # the newsroom's "Yours"
        ]

    def __str__(self) -> str:
        return self.title

    def save(self, *args, **kwargs):
        """Render once what listings and pages would otherwise compute on every view."""
        self.settle_publication()  # the card and header print the publication date
        self.render_body()
        new = self.pk is None
        if not new:  # a new post has no bylines or tags yet: rendered once it has an id
            render_parts(self)
        if kwargs.get("update_fields") is not None:
            kwargs["update_fields"] = {*kwargs["update_fields"], *self.DERIVED_FIELDS}
        super().save(*args, **kwargs)
        if new:
            render_parts(self)
            Post.objects.filter(pk=self.pk).update(**{name: getattr(self, name) for name in PARTS})
        record_uses(self, [*filter(None, [self.lead_image_id]), *image_ids(self.body)],
                    published=self.status == Status.PUBLISHED)
        self.draw_social_card()

    def draw_social_card(self) -> None:
        """Draw and store the og:image card if what it shows (title, authors, date) changed."""
        shown = {"title": self.title, "kicker": "Blog", "day": date_format(self.published_at, "F j, Y")
                 if self.published_at else "", "byline": ", ".join(a["name"] for a in self.authors_tags.get("authors", ()))}
        lead = Image.objects.filter(pk=self.lead_image_id).first() if self.lead_image_id else None
        if lead is not None:  # the card shows the lead image beside the title (its hash: a new image, a new card)
            shown["image"] = lead.content_hash
        key = social_cards.store(PostCard, self, shown, photo=lead and (lambda: open_fallback(lead)))
        if key != self.social_card:
            self.social_card = key
            Post.objects.filter(pk=self.pk).update(social_card=key)

    @property
    def social_card_url(self) -> str:
        """The card's URL (empty until drawn): it changes with the image, so it may be cached for good."""
        return reverse("blog:card", args=[self.slug, self.social_card]) if self.social_card else ""

    def check_publishable(self) -> None:
        """A post goes public with a byline, whatever the path (the admin form requires one too)."""
        if not self.post_authors.exists():
            raise WorkflowError(f"“{self.title}” cannot be published: it has no author. Add one to its byline first.")

    def render_body(self) -> None:
        """Body HTML (sanitised), the lead image's, the body's plain-text start (captions left out), its word
        count and the page's meta description (from the excerpt, which is Markdown too, or else the body).
        The first image a reader meets loads at once (the lead image, else the body's first), the rest lazily."""
        self.body_html = render_markdown(self.body, images=True, eager=0 if self.lead_image_id else 1)
        self.lead_html = render_image(self.lead_image_id) if self.lead_image_id else ""
        prose = FIGCAPTION.sub("", self.body_html)
        text = " ".join(html.unescape(strip_tags(prose)).split())  # plain: templates escape it again
        self.auto_excerpt = Truncator(text).words(EXCERPT_WORDS, truncate=" …")
        self.word_count = len(text.split())
        self.meta_description = describe(self.excerpt) if self.excerpt.strip() else cut_at_word(text)

    def get_absolute_url(self) -> str:
        return reverse("blog:post", args=[self.slug])

    @property
    def display_excerpt(self) -> str:
        """The explicit excerpt, or the body's first words as plain text."""
        return self.excerpt or self.auto_excerpt

    @property
    def disclosure_text(self) -> str:
        """The disclosure without a leading "Disclosure." (templates print that label themselves)."""
        text = self.disclosure.strip()
        return text[len("Disclosure."):].lstrip() if text.lower().startswith("disclosure.") else text

    @property
    def reading_time(self) -> int:
        """Minutes to read the body, at least one."""
        return max(1, round(self.word_count / WORDS_PER_MINUTE))

    def ordered_tags(self) -> list:
        """Tags in the order the editor gave them (uses the reader prefetch when present)."""
        return [item.tag for item in self.tagged_items.all()]

    def ordered_authors(self) -> list[Author]:
        """Authors in byline order (uses the listing prefetch when present)."""
        return [link.author for link in self.post_authors.all()]


class PostAuthor(models.Model):
    """An author's place in a post's byline."""

    post = models.ForeignKey(Post, related_name="post_authors", on_delete=models.CASCADE)
    author = models.ForeignKey(Author, related_name="post_links", on_delete=models.PROTECT)
    position = models.PositiveSmallIntegerField(default=0)

    class Meta:
        ordering = ["position", "id"]
        verbose_name = "author"
        constraints = [models.UniqueConstraint(fields=["post", "author"], name="unique_post_author")]

    def __str__(self) -> str:
        return str(self.author)


class PostCard(social_cards.StoredCard):
    """A post's og:image (``publishing.social_cards``), kept out of the post's row: pages read that row."""

    post = models.OneToOneField(Post, primary_key=True, related_name="+", on_delete=models.CASCADE)


class PostRerender(rerenders.Rerender):
    """Posts a renamed author or tag shows in, owed a re-render by a worker (``publishing.rerenders``)."""


# Revision history: a post's version includes its ordered authors and tags.
reversion.register(PostAuthor)
reversion.register(TaggedPost)
reversion.register(Post, follow=["post_authors", "tagged_items"], exclude=EDITORIAL_RECORD_FIELDS)
