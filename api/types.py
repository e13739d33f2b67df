"""Input field types for the API that keep bad input a 4xx.

PostgreSQL refuses NUL characters with a database error (a 500), and a time
at the very end of the calendar overflows when converted to UTC; the types here
reject or normalise such input during validation, and declare their limits in
the OpenAPI schema at the same time.
"""
import datetime
import re
from typing import Annotated

from django.core.exceptions import ValidationError
from django.core.validators import URLValidator
from pydantic import AfterValidator, BeforeValidator, Field

NO_NUL = r"^[^\x00]*$"
SLUG = r"^[-a-zA-Z0-9_]+$"
FULL_NAME = r"^[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})/[A-Za-z0-9._-]{1,100}$"


def text(max_length: int | None = None, **kwargs):
    """A string without NUL characters, at most `max_length` long."""
    return Annotated[str, Field(pattern=NO_NUL, max_length=max_length, **kwargs)]


ISO_DATE_START = re.compile(r"^[0-9]{4}-[0-9]{2}-[0-9]{2}")


def _iso_only(value):
    """pydantic would read "0.5" or 1700000000 as a Unix timestamp; the API takes ISO 8601 only."""
    if isinstance(value, datetime.date):
        return value
    if not isinstance(value, str) or not ISO_DATE_START.match(value):
        raise ValueError("must be an ISO 8601 date or date-time, e.g. 2026-05-01 or 2026-05-01T12:00:00Z")
    return value


def _utc(moment: datetime.datetime) -> datetime.datetime:
    """Aware and in UTC (naive means UTC); times that overflow at the ends of the calendar are clamped."""
    if moment.tzinfo is None:
        return moment.replace(tzinfo=datetime.timezone.utc)
    try:
        return moment.astimezone(datetime.timezone.utc)
    except OverflowError:
        edge = datetime.datetime.min if moment.year == 1 else datetime.datetime.max
        return edge.replace(tzinfo=datetime.timezone.utc)


Moment = Annotated[datetime.datetime, BeforeValidator(_iso_only), AfterValidator(_utc)]
Day = Annotated[datetime.date, BeforeValidator(_iso_only)]
Slug = Annotated[str, Field(pattern=SLUG, max_length=200)]
AuthorSlug = Annotated[str, Field(pattern=SLUG, max_length=140)]
#: django-taggit keeps non-ASCII letters in tag slugs ("café" → ``café``), as the site's tag URLs do.
TAG_SLUG = r"^[-\w]+$"
TagSlug = Annotated[str, Field(pattern=TAG_SLUG, max_length=100)]
FullName = Annotated[str, Field(pattern=FULL_NAME, max_length=140, examples=["pytorch/torchtitan"])]


def _has_slug(name: str) -> str:
    """A tag name must give django-taggit a non-empty slug: the slug names the tag's page."""
    from taggit.models import Tag

    if not Tag(name=name).slugify(name):
        raise ValueError("a tag name needs at least one letter or digit")
    return name


TagName = Annotated[str, Field(pattern=NO_NUL, min_length=1, max_length=100), AfterValidator(_has_slug)]


def _web_url(value: str) -> str:
    """Only http(s) addresses: these end up in href attributes on the site."""
    if value:
        try:
            URLValidator(schemes=["http", "https"])(value)
        except ValidationError:
            raise ValueError("must be an http:// or https:// address") from None
    return value


def web_url(max_length: int):
    return Annotated[str, Field(pattern=NO_NUL, max_length=max_length), AfterValidator(_web_url)]
