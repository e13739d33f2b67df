"""Input field types for the API that keep bad input a 4xx.

PostgreSQL refuses NUL characters and out-of-range timestamps with a database
error (a 500); declaring the limits here rejects such input during validation
and documents them in the OpenAPI schema at the same time.
"""
import datetime
from typing import Annotated

from django.core.exceptions import ValidationError
from django.core.validators import URLValidator
from pydantic import AfterValidator, Field

NO_NUL = r"^[^\x00]*$"
SLUG = r"^[-a-zA-Z0-9_]+$"
FULL_NAME = r"^[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})/[A-Za-z0-9._-]{1,100}$"
EARLIEST = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)
LATEST = datetime.datetime(9000, 1, 1, tzinfo=datetime.timezone.utc)


def text(max_length: int | None = None, **kwargs):
    """A string without NUL characters, at most `max_length` long."""
    return Annotated[str, Field(pattern=NO_NUL, max_length=max_length, **kwargs)]


def _in_range(moment: datetime.datetime) -> datetime.datetime:
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=datetime.timezone.utc)
    if not EARLIEST <= moment <= LATEST:
        raise ValueError("must be between 1970-01-01 and 9000-01-01")
    return moment


def _date_in_range(day: datetime.date) -> datetime.date:
    if not EARLIEST.date() <= day <= LATEST.date():
        raise ValueError("must be between 1970-01-01 and 9000-01-01")
    return day


Moment = Annotated[datetime.datetime, AfterValidator(_in_range)]
Day = Annotated[datetime.date, AfterValidator(_date_in_range)]
Slug = Annotated[str, Field(pattern=SLUG, max_length=200)]
FullName = Annotated[str, Field(pattern=FULL_NAME, max_length=140, examples=["pytorch/torchtitan"])]


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
