"""API shapes for the blog. A post is written in the shape it is read in (PostIn ⊂ PostOut)."""
import datetime
from typing import Literal

from ninja import Field, Schema

from api.pagination import ListParams
from api.types import AuthorSlug, Day, Moment, Slug, TagName, TagSlug, text
from images.schemas import ImageIdIn, ImageOut, shown_images

StatusName = Literal["draft", "in_review", "published", "archived"]


class AuthorOut(Schema):
    slug: str
    name: str
    handle: str
    bio: str
    url: str = Field(..., alias="get_absolute_url")
    updated_at: datetime.datetime


class AuthorRef(Schema):
    slug: str
    name: str
    handle: str


class AuthorIn(Schema):
    slug: Slug = Field(..., description="An existing author; create authors with POST /authors/.")


class NewAuthorIn(Schema):
    slug: AuthorSlug
    name: text(120, min_length=1)
    handle: text(60) = ""
    bio: text(10_000) = ""


class TagOut(Schema):
    id: int
    name: str
    slug: str
    post_count: int = Field(..., description="Posts with this tag that you can see (published only, without read:drafts).")


class PostListOut(Schema):
    id: int
    slug: str
    url: str = Field(..., alias="get_absolute_url")
    title: str
    excerpt: str = Field(..., description="The editors' excerpt; empty when listings use the body's start.")
    display_excerpt: str
    disclosure: str
    authors: list[AuthorRef] = Field(..., alias="ordered_authors")
    tags: list[str]
    status: StatusName
    published_at: datetime.datetime | None
    updated_at: datetime.datetime

    @staticmethod
    def resolve_tags(obj) -> list[str]:
        return sorted(tag.name for tag in obj.tags.all())


class PostOut(PostListOut):
    body: str
    body_html: str
    created_at: datetime.datetime
    lead_image: ImageOut | None = Field(None, description="Shown above the body and on the post's social card.")
    images: list[ImageOut] = Field(..., description="Every image the post shows, the lead image first, in page order.")

    @staticmethod
    def resolve_images(obj) -> list:
        return shown_images(obj)


class PostIn(Schema):
    """The detail shape; read-only fields (ids, HTML, status, timestamps) are ignored."""

    title: text(300, min_length=1)
    slug: Slug
    body: text(500_000, min_length=1)
    excerpt: text(5000) = ""
    disclosure: text(300) = ""
    authors: list[AuthorIn] = Field(default_factory=list, max_length=20, description="In byline order.")
    tags: list[TagName] = Field(default_factory=list, max_length=50)
    lead_image: ImageIdIn | None = Field(None, description="An uploaded image, by id; null for none.")


class StatusIn(Schema):
    status: StatusName
    published_at: Moment | None = Field(None, description="A future time schedules publication.")


class PostFilters(ListParams):
    tag: list[TagSlug] = Field(default_factory=list, description="Tag slug; repeat for several tags, all must match.")
    author: Slug | None = Field(None, description="Author slug.")
    date_from: Day | None = Field(None, description="Publication date, inclusive.")
    date_to: Day | None = None
    q: text(200, min_length=1) | None = Field(None, description=(
        "Search as the site's search does: on PostgreSQL full text over title, excerpt and body with "
        "\"quoted phrases\", -exclusions and `or`, best match first (the cursor follows that order); "
        "on SQLite every word but stop words must appear, stemmed as on PostgreSQL (`allocators` finds "
        "\"allocator\"), in the usual order."
    ))
    status: StatusName | None = Field(None, description="Needs a read:drafts token for anything but published.")


class AuthorFilters(ListParams):
    pass


class TagFilters(ListParams):
    pass
