"""API shapes for The Wire. A digest is written in the shape it is read in (DigestIn ⊂ DigestOut)."""
import datetime
from typing import Literal

from ninja import Field, Schema

from api.pagination import ListParams
from api.types import Day, FullName, Moment, Slug, text, web_url
from images.schemas import ImageOut, shown_images

Priority = Literal["immediate", "plan", "monitor"]
Kind = Literal["pull_request", "commit", "release", "issue"]
StatusName = Literal["draft", "in_review", "published", "archived"]


class TopicOut(Schema):
    slug: str
    name: str
    description: str
    updated_at: datetime.datetime


class TopicRef(Schema):
    slug: str
    name: str


class TopicRefIn(Schema):
    slug: Slug


class RepositoryOut(Schema):
    full_name: str
    url: str
    description: str
    topic: str | None = Field(None, alias="topic.slug")
    updated_at: datetime.datetime


class RepositoryIn(Schema):
    full_name: FullName
    topic: Slug | None = Field(None, description="Slug of an existing topic.")
    url: web_url(200) = ""
    description: text(5000) = ""


class ReferenceOut(Schema):
    id: int
    repository: str = Field(..., alias="repository.full_name")
    kind: Kind
    key: str
    number: int | None
    sha: str
    title: str
    display_title: str
    url: str
    author_login: str
    co_authors: list
    state: str
    labels: list
    merged_at: datetime.datetime | None
    opened_at: datetime.datetime | None
    body: str = Field(..., description="Markdown as written on GitHub (untrusted).")
    body_html: str = Field(..., description="body rendered and sanitised.")
    updated_at: datetime.datetime


class CitingDigest(Schema):
    number: int = Field(..., description="The citation number this digest uses.")
    slug: str = Field(..., alias="digest.slug")
    headline: str = Field(..., alias="digest.headline")
    date: datetime.date = Field(..., alias="digest.date")
    status: StatusName = Field(..., alias="digest.status")


class ReferenceDetailOut(ReferenceOut):
    digests: list[CitingDigest] = Field(..., alias="visible_citations")


class ReferenceIn(Schema):
    """Identifies a reference by (repository, kind, key); the other fields create it if it is new."""

    repository: FullName
    kind: Kind
    key: text(200, min_length=1)
    title: text(500) | None = Field(None, description="Required when the reference does not exist yet.")
    number: int | None = Field(None, ge=1, le=2_147_483_647)
    sha: text(40) = ""
    url: web_url(500) = ""
    author_login: text(100) = ""
    state: text(20) = ""
    merged_at: Moment | None = None
    opened_at: Moment | None = None
    body: text(100_000) = ""


class CitationOut(Schema):
    number: int
    reference: ReferenceOut


class CitationIn(Schema):
    number: int = Field(..., ge=1, le=9999)
    reference: ReferenceIn


class ActionItemOut(Schema):
    position: int
    text: str
    repository: str | None = Field(None, alias="repository.full_name")
    priority: Priority


class ActionItemIn(Schema):
    position: int = Field(0, ge=0, le=32767)
    text: text(5000, min_length=1)
    repository: FullName | None = None
    priority: Priority = "plan"


class ActionItemListOut(ActionItemOut):
    id: int
    digest: str = Field(..., alias="digest.slug")
    digest_date: datetime.date = Field(..., alias="digest.date")
    topic: str = Field(..., alias="digest.topic.slug")


class FAQOut(Schema):
    position: int
    question: str
    answer: str


class FAQIn(Schema):
    position: int = Field(0, ge=0, le=32767)
    question: text(300, min_length=1)
    answer: text(10_000, min_length=1)


class DigestListOut(Schema):
    id: int
    slug: str
    url: str = Field(..., alias="get_absolute_url")
    topic: TopicRef
    date: datetime.date
    section: str
    label: str
    headline: str
    summary: str
    summary_html: str
    byline: str
    status: StatusName
    published_at: datetime.datetime | None
    updated_at: datetime.datetime


class DigestOut(DigestListOut):
    disclosure: str = Field(..., description="How it was written (set when a model drafts it); plain text.")
    body: str
    body_html: str
    created_at: datetime.datetime
    references: list[CitationOut] = Field(..., alias="digest_references")
    action_items: list[ActionItemOut]
    faq: list[FAQOut]
    faq_is_generated: bool = Field(..., description="True while the FAQ is generated; such a FAQ is not stored on write.")
    images: list[ImageOut] = Field(..., description="The images the body shows (`![alt](image:ID)`), in order.")

    @staticmethod
    def resolve_images(obj) -> list:
        return shown_images(obj)

    @staticmethod
    def resolve_faq(obj) -> list[dict]:
        """What readers see: the stored FAQ, or the generated one while there is none."""
        entries = list(obj.faq_entries.all())
        if entries:
            return [{"position": e.position, "question": e.question, "answer": e.answer} for e in entries]
        return [{"position": n, "question": q, "answer": a} for n, (q, a) in enumerate(obj.default_faq(), start=1)]

    @staticmethod
    def resolve_faq_is_generated(obj) -> bool:
        return not obj.faq_entries.all()


class DigestIn(Schema):
    """The detail shape; read-only fields (ids, HTML, status, timestamps) are ignored."""

    topic: TopicRefIn
    date: Day
    section: text(60) = "The Wire"
    label: text(60) = ""
    headline: text(300, min_length=1)
    summary: text(50_000, min_length=1)
    body: text(200_000) = ""
    byline: text(100) = "RepoJournal"
    disclosure: text(300) = ""
    slug: Slug | None = Field(None, description="Defaults to <topic>-<date>.")
    references: list[CitationIn] = Field(default_factory=list, max_length=500)
    action_items: list[ActionItemIn] = Field(default_factory=list, max_length=200)
    faq: list[FAQIn] = Field(default_factory=list, max_length=50)
    faq_is_generated: bool = False


class StatusIn(Schema):
    status: Literal["draft", "in_review", "published", "archived"]
    published_at: Moment | None = Field(None, description="A future time schedules publication.")


class DigestFilters(ListParams):
    topic: Slug | None = Field(None, description="Topic slug.")
    repository: FullName | None = Field(None, description="Digests citing or naming this owner/name.")
    date_from: Day | None = None
    date_to: Day | None = None
    priority: Priority | None = Field(None, description="Digests with an action item of this priority.")
    status: StatusName | None = Field(None, description="Needs a read:drafts token for anything but published.")


class ActionItemFilters(ListParams):
    repository: FullName | None = None
    priority: Priority | None = None
    topic: Slug | None = None
    date_from: Day | None = Field(None, description="Digest date, inclusive.")
    date_to: Day | None = None


class ReferenceFilters(ListParams):
    repository: FullName | None = None
    kind: Kind | None = None
    merged_from: Moment | None = None
    merged_to: Moment | None = None
    cited: bool | None = Field(None, description="Cited by a digest you can see (true) or not (false).")


class RepositoryFilters(ListParams):
    topic: Slug | None = None


class TopicFilters(ListParams):
    pass
