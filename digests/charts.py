"""Server-rendered SVG bar charts: geometry is computed here, the template only draws it."""
import datetime
from dataclasses import dataclass

WIDTH = 520
HEIGHT = 120
GAP = 4
LABEL_SPACE = 16


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

    @property
    def first_week(self) -> datetime.date:
        return self.bars[0].week

    @property
    def last_week(self) -> datetime.date:
        return self.bars[-1].week


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
