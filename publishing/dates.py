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
import functools

from django.utils import timezone, translation
from django.utils.dates import MONTHS, MONTHS_3


@functools.lru_cache(maxsize=64)
def _month_names(language: str | None) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(full names, "Jun"-style abbreviations) of the months in `language`, index 1 = January.

    Django's tables hold lazy translations: each use looks the name up in the
    active catalogue again, and a page prints dozens of them. The catalogues do
    not change while a process runs, so the names are looked up once per language.
    """
    with translation.override(language):
        full = ("", *(str(MONTHS[month]) for month in range(1, 13)))
        short = ("", *(str(MONTHS_3[month]).title() for month in range(1, 13)))
    return full, short


def month_names() -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The active language's (full names, abbreviations) of the months, index 1 = January."""
    return _month_names(translation.get_language())


def month_day(day: datetime.date) -> str:
    """``{{ day|date:"M j" }}``: "Jun 1"."""
    return f"{month_names()[1][day.month]} {day.day}"


def long_date(moment: datetime.datetime) -> str:
    """``{{ moment|date:"F j, Y" }}``: "June 1, 2026", in the current time zone."""
    return dated(moment)[1]


def machine_datetime(moment: datetime.datetime) -> str:
    r"""``{{ moment|date:'Y-m-d\TH:i:sO' }}``: "2026-06-01T09:30:00+0000", in the current time zone."""
    return dated(moment)[0]


def dated(moment: datetime.datetime, names: tuple[str, ...] | None = None, zone=None) -> tuple[str, str]:
    """(``machine_datetime``, ``long_date``) of `moment` from one conversion to the current time zone.

    A listing printing many dates passes `names`, the active language's
    ``month_names()[0]``, and `zone`, ``timezone.get_current_timezone()``,
    looked up once for all of them (each lookup reads a context-local).
    """
    local = moment.astimezone(zone) if zone is not None else timezone.localtime(moment)
    names = names or month_names()[0]
    return local.strftime("%Y-%m-%dT%H:%M:%S%z"), f"{names[local.month]} {local.day}, {local.year:04d}"
