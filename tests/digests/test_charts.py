"""The repository activity chart: weekly counts in one aggregate query, the same as counting by hand; its markup."""
import datetime
import random
import xml.etree.ElementTree as ET

import pytest
from django.test.utils import override_settings
from django.utils import timezone

from digests.charts import LABEL_INSET, LABEL_SIZE, weekly_bars
from digests.factories import DigestFactory, DigestReferenceFactory, ReferenceFactory, RepositoryFactory
from digests.models import Reference

TODAY = datetime.date(2026, 6, 17)  # a Wednesday
WEEKS = 26


def straightforward(dates: list[datetime.datetime], today: datetime.date) -> dict[datetime.date, int]:
    """Every week of the window, counted one date at a time in Python (the local time zone's weeks)."""
    first_monday = today - datetime.timedelta(days=today.weekday(), weeks=WEEKS - 1)
    counts = {first_monday + datetime.timedelta(weeks=i): 0 for i in range(WEEKS)}
    for moment in dates:
        day = timezone.localtime(moment).date()
        week = day - datetime.timedelta(days=day.weekday())
        if week in counts:
            counts[week] += 1
    return counts


def generated_references(count: int) -> tuple:
    """A repository with `count` references merged at random moments over ~40 weeks, and the week edges."""
    rng = random.Random(18)
    repository = RepositoryFactory()
    digest = DigestFactory()
    end = timezone.make_aware(datetime.datetime.combine(TODAY, datetime.time(23, 59)))
    moments = [end - datetime.timedelta(minutes=rng.randrange(0, 40 * 7 * 24 * 60)) for _ in range(count)]
    monday = TODAY - datetime.timedelta(days=TODAY.weekday())
    edge = timezone.make_aware(datetime.datetime.combine(monday, datetime.time.min))
    moments += [edge, edge - datetime.timedelta(seconds=1)]  # Monday 00:00 and the Sunday before
    for number, moment in enumerate(moments, start=1):
        DigestReferenceFactory(digest=digest, number=number,
                               reference=ReferenceFactory(repository=repository, merged_at=moment))
    return repository, moments


@pytest.mark.django_db
@pytest.mark.parametrize("zone", ["UTC", "America/Los_Angeles"])
def test_weekly_counts_match_counting_each_date(zone):
    with override_settings(TIME_ZONE=zone), timezone.override(zone):
        repository, moments = generated_references(120)
        weeks = Reference.objects.published().filter(repository=repository).merged_per_week(WEEKS, today=TODAY)
        expected = straightforward(moments, TODAY)
    assert dict(weeks) == expected
    assert [week for week, _count in weeks] == sorted(expected)
    assert 0 < sum(count for _week, count in weeks) < len(moments)  # some fall outside the window


@pytest.mark.django_db
def test_weekly_counts_are_one_query_whatever_the_number_of_references(django_assert_num_queries):
    repository, _moments = generated_references(40)
    references = Reference.objects.published().filter(repository=repository)
    with django_assert_num_queries(1) as captured:
        references.merged_per_week(WEEKS, today=TODAY)
    assert "GROUP BY" in captured.captured_queries[0]["sql"]  # weeks counted by the database, not in Python


#: The chart's markup as the repository page's template wrote it before ``BarChart.figure_html``, with the
#: axis labels inside the frame (issue 25: ``inset`` from its sides, their baseline at ``chart.label_y``).
FIGURE_TEMPLATE = """<figure class="chart">
    <svg viewBox="0 0 {{ chart.width }} {{ chart.height }}" width="100%" role="img" aria-labelledby="chart-title" class="bar-chart">
      <title id="chart-title">{{ chart.total }} merged item{{ chart.total|pluralize }} cited over the last {{ chart.bars|length }} weeks, at most {{ chart.peak }} in one week</title>
      <line x1="0" y1="{{ chart.baseline }}" x2="{{ chart.width }}" y2="{{ chart.baseline }}" class="axis"/>
      {{ chart.bars_svg }}
      <text x="{{ inset }}" y="{{ chart.label_y }}" font-size="{{ size }}" class="chart-label">{{ chart.first_week|date:"M j" }}</text>
      <text x="{{ right }}" text-anchor="end" y="{{ chart.label_y }}" font-size="{{ size }}" class="chart-label">{{ chart.last_week|date:"M j, Y" }}</text>
    </svg>
    <figcaption>Merged items cited by The Wire, per week, over the last {{ chart.bars|length }} weeks (total {{ chart.total }}).</figcaption>
  </figure>"""


@pytest.mark.parametrize("counts", [[0] * 26, [0] * 25 + [1], [3, 0, 12, 1] * 6 + [7, 2], [1500] * 26])
def test_the_figure_is_what_the_template_wrote(counts):
    """``figure_html`` prints the template's markup: plurals, the last week's year (the chart ends
    in January, across a new year), numbers past a thousand."""
    from django.template import Context, Template

    first = datetime.date(2025, 7, 28)
    chart = weekly_bars([(first + datetime.timedelta(weeks=i), count) for i, count in enumerate(counts)])
    assert chart.last_week.year == 2026 and chart.first_week.year == 2025
    placed = {"inset": LABEL_INSET, "right": chart.width - LABEL_INSET, "size": LABEL_SIZE}
    assert chart.figure_html() == Template(FIGURE_TEMPLATE).render(Context({"chart": chart, **placed}))


def edge_labels(chart) -> list:
    """The figure's axis labels (``<text>`` elements of the ``<svg>``), parsed as the XML they are."""
    return ET.fromstring(chart.figure_html()).find("svg").findall("text")


@pytest.mark.parametrize("counts", [[0] * 26, [3, 0, 12, 1] * 6 + [7, 2]])
def test_both_axis_labels_are_alike_and_drawn_inside_the_frame(counts):
    """Issue 25: the last label ("Nov 23, 2026") was drawn past the frame. Both labels have one class and
    one size, stand clear of the left and right edges (the last anchored to its end), and leave room
    under their baseline for descenders ("," "J" "y") inside the ``viewBox`` and above it for the axis."""
    last = datetime.date(2026, 11, 23)
    chart = weekly_bars([(last - datetime.timedelta(weeks=len(counts) - 1 - i), count) for i, count in enumerate(counts)])
    first_label, last_label = edge_labels(chart)
    assert (first_label.text, last_label.text) == ("Jun 1", "Nov 23, 2026")
    assert first_label.get("class") == last_label.get("class") == "chart-label"
    assert first_label.get("font-size") is not None  # not left to a stylesheet rule
    assert first_label.get("font-size") == last_label.get("font-size")
    size = float(first_label.get("font-size"))
    assert first_label.get("text-anchor", "start") == "start" and last_label.get("text-anchor") == "end"
    assert 0 < float(first_label.get("x")) and float(last_label.get("x")) < chart.width
    for label in (first_label, last_label):
        baseline = float(label.get("y"))
        assert baseline + 0.25 * size <= chart.height  # a descender stays inside the frame
        assert baseline - 0.95 * size >= chart.baseline  # and the tallest glyph below the axis
