"""Server-rendered SVG bar charts: geometry and the bars' markup are made here, the template frames them."""
import datetime
from dataclasses import dataclass

from django.utils.html import escape
from django.utils.safestring import mark_safe

from publishing.dates import month_day

WIDTH = 520
HEIGHT = 120
GAP = 4
LABEL_SPACE = 16
#: The axis labels' font size in the ``viewBox``'s units: written on each label, not left to the stylesheet,
#: because the room below the axis (``LABEL_SPACE``) and the label's position are measured in it.
LABEL_SIZE = 10
#: How far each label stands from the frame's left or right edge: a glyph's box can start left of its
#: origin ("J") and the frame's corners are rounded.
LABEL_INSET = 4
#: How far the labels' baseline stands above the frame's bottom: room for descenders (",", "J", "y"),
#: about a quarter of ``LABEL_SIZE`` in the sans-serif fonts the site names.
LABEL_DESCENT = 4


@dataclass(frozen=True)
class Bar:
    week: datetime.date
    count: int
    x: float
    y: float
    width: float
    height: float


@dataclass(frozen=True)
class BarChart:
    bars: list[Bar]
    total: int
    peak: int
    width: int = WIDTH
    height: int = HEIGHT
    baseline: int = HEIGHT - LABEL_SPACE
    label_y: int = HEIGHT - LABEL_DESCENT

    @property
    def first_week(self) -> datetime.date:
        return self.bars[0].week

    @property
    def last_week(self) -> datetime.date:
        return self.bars[-1].week

    def bars_svg(self) -> str:
        """Every bar's ``<rect>`` and tooltip ("Week of Jun 1: 3") as safe markup for the ``<svg>``.

        Written here rather than by a template loop (or ``format_html``): 26 bars of
        six values each were a third of the repository page's rendering time. Every
        value is a number this module computed, but the month's name, escaped.
        """
        return mark_safe("".join(
            f'<rect x="{bar.x}" y="{bar.y}" width="{bar.width}" height="{bar.height}" class="bar">'
            f"<title>Week of {escape(month_day(bar.week))}: {bar.count}</title></rect>"
            for bar in self.bars
        ))

    def figure_html(self) -> str:
        """The whole ``<figure>``: the ``<svg>`` (title, axis, bars, first and last week) and its caption.

        Written here for the same reason as ``bars_svg``: as a template it was
        fifteen variables and two ``date`` filters, more than the rest of the
        page's own markup. The numbers are this module's, the month names escaped.
        """
        weeks, total, width, height = len(self.bars), self.total, self.width, self.height
        last, label = self.last_week, f'y="{self.label_y}" font-size="{LABEL_SIZE}" class="chart-label"'
        return mark_safe(
            f'<figure class="chart">\n'
            f'    <svg viewBox="0 0 {width} {height}" width="100%" role="img" aria-labelledby="chart-title"'
            f' class="bar-chart">\n'
            f'      <title id="chart-title">{total} merged item{"" if total == 1 else "s"} cited over the last'
            f" {weeks} weeks, at most {self.peak} in one week</title>\n"
            f'      <line x1="0" y1="{self.baseline}" x2="{width}" y2="{self.baseline}" class="axis"/>\n'
            f"      {self.bars_svg()}\n"
            f'      <text x="{LABEL_INSET}" {label}>{escape(month_day(self.first_week))}</text>\n'
            f'      <text x="{width - LABEL_INSET}" text-anchor="end" {label}>'
            f"{escape(month_day(last))}, {last.year:04d}</text>\n"
            f"    </svg>\n"
            f"    <figcaption>Merged items cited by The Wire, per week, over the last {weeks} weeks"
            f" (total {total}).</figcaption>\n"
            f"  </figure>"
        )


def weekly_bars(counts: list[tuple[datetime.date, int]]) -> BarChart:
    """Lay out one bar per week, scaled so the busiest week fills the plot height."""
    peak = max((count for _week, count in counts), default=0)
    plot_height = HEIGHT - LABEL_SPACE - 4
    slot = WIDTH / max(len(counts), 1)
    bars = []
    for index, (week, count) in enumerate(counts):
        height = plot_height * count / peak if peak else 0
        bars.append(
            Bar(week, count, round(index * slot + GAP / 2, 2), round(HEIGHT - LABEL_SPACE - height, 2),
                round(slot - GAP, 2), round(height, 2))
        )
    return BarChart(bars=bars, total=sum(count for _week, count in counts), peak=peak)
