"""A dependency-free SVG bar chart of each target's ratio to the baseline, with the issue's bars marked."""
from xml.sax.saxutils import escape

ROW, LABEL_WIDTH, BAR_WIDTH, TOP = 22, 300, 420, 40
COLOURS = {"cold": "#4c72b0", "warm": "#dd8452", "warm-redis": "#c9a227", "none": "#55a868"}
MARKS = (0.10, 0.15, 0.30, 0.70)


def ratio_chart(targets: list[dict]) -> str:
    rows = [t for t in targets if t["kind"] != "baseline"]
    largest = max([1.0, *(t["ratio"] for t in rows)])
    height = TOP + ROW * len(rows) + 30
    width = LABEL_WIDTH + BAR_WIDTH + 80
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
             f'font-family="sans-serif" font-size="12" role="img" aria-label="Ratio to the baseline per target">',
             f'<rect width="{width}" height="{height}" fill="white"/>',
             '<text x="10" y="20" font-size="14" font-weight="bold">Throughput / baseline '
             '(blue: cold, orange: warm, yellow: warm via Redis only, green: API, webhook)</text>']
    for mark in MARKS:
        x = LABEL_WIDTH + BAR_WIDTH * mark / largest
        parts.append(f'<line x1="{x:.1f}" y1="{TOP - 6}" x2="{x:.1f}" y2="{height - 24}" stroke="#c44" '
                     f'stroke-dasharray="3,3"/><text x="{x:.1f}" y="{height - 10}" fill="#c44" '
                     f'text-anchor="middle">{mark}×</text>')
    for index, target in enumerate(rows):
        y = TOP + index * ROW
        length = BAR_WIDTH * target["ratio"] / largest
        parts.append(f'<text x="{LABEL_WIDTH - 8}" y="{y + 14}" text-anchor="end">'
                     f'{escape(target["name"])} ({target["cache"]})</text>')
        parts.append(f'<rect x="{LABEL_WIDTH}" y="{y + 3}" width="{max(length, 1):.1f}" height="{ROW - 6}" '
                     f'fill="{COLOURS[target["cache"]]}"/>')
        parts.append(f'<text x="{LABEL_WIDTH + length + 4:.1f}" y="{y + 14}">{target["ratio"]:.3f}×</text>')
    parts.append("</svg>")
    return "\n".join(parts) + "\n"
