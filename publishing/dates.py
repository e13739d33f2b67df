"""Dates as the ``date`` template filter prints them, without its per-call format parsing.

``django.utils.dateformat`` parses the format string with a regular expression
and builds a formatter object on every call: about 15 µs here, and a repository
page prints 66 dates (26 chart weeks, two per reference). These print the same
text for the three formats that page uses -- month names through Django's own
translated tables, the datetime in the current time zone as the filter does --
and tests/test_dates.py compares them with the filter in several languages and
zones.
"""
import datetime

from django.utils import timezone
from django.utils.dates import MONTHS, MONTHS_3


def month_day(day: datetime.date) -> str:
    """``{{ day|date:"M j" }}``: "Jun 1"."""
    return f"{MONTHS_3[day.month].title()} {day.day}"


def long_date(moment: datetime.datetime) -> str:
    """``{{ moment|date:"F j, Y" }}``: "June 1, 2026", in the current time zone."""
    local = timezone.localtime(moment)
    return f"{MONTHS[local.month]} {local.day}, {local.year:04d}"


def machine_datetime(moment: datetime.datetime) -> str:
    r"""``{{ moment|date:'Y-m-d\TH:i:sO' }}``: "2026-06-01T09:30:00+0000", in the current time zone."""
    return timezone.localtime(moment).strftime("%Y-%m-%dT%H:%M:%S%z")
