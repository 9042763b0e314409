"""Charts as PNG images (matplotlib, no display needed), and as Markdown that shows the image inline.

The Dagster UI renders neither Vega-Lite nor JSON as a chart, but its Markdown renders images with
`data:` URIs, so a chart travels inside the materialisation's metadata with nothing to serve.
"""

from __future__ import annotations

import base64
import io
from datetime import date, timedelta

from nexus_memory.analytics.model import Chart

MAX_SERIES = 8  # more lines than this read as noise: the smallest are summed as 'other'


def render_png(chart: Chart, *, width_in: float = 10.0, height_in: float = 3.6, dpi: int = 100) -> bytes:
    """A line per series of `chart` (x: days), as PNG bytes; an empty chart says there is no data."""
    # Imported here: matplotlib takes a moment to load, and only chart drawing needs it.
    import matplotlib.dates as mdates
    from matplotlib.figure import Figure
    from matplotlib.ticker import MaxNLocator

    series = _series(chart)
    figure = Figure(figsize=(width_in, height_in), dpi=dpi, layout="constrained")
    ax = figure.add_subplot()
    ax.set_title(chart.title, fontsize=11, loc="left")
    ax.set_ylabel(chart.y)
    if not series:
        ax.text(0.5, 0.5, "no data yet", ha="center", va="center", transform=ax.transAxes, color="grey")
        ax.set_xticks([])
        ax.set_yticks([])
    for name, points in series.items():
        days = sorted(points)
        marker = "o" if len(days) <= 40 else None  # a few points read better as dots on the line
        ax.plot(days, [points[d] for d in days], label=name, linewidth=1.2, marker=marker, markersize=3)
    if series:
        locator = mdates.AutoDateLocator(maxticks=10)
        ax.xaxis.set_major_locator(locator)
        ax.xaxis.set_major_formatter(mdates.ConciseDateFormatter(locator))
        ax.yaxis.set_major_locator(MaxNLocator(integer=True))
        ax.set_ylim(bottom=0)
        ax.grid(True, alpha=0.3)
        ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=8, frameon=False)
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png")
    return buffer.getvalue()


def _series(chart: Chart) -> dict[str, dict[date, int | float]]:
    """{series: {day: value}} for every day from the first to the last (0 where a series is quiet).

    The busiest MAX_SERIES - 1 series keep their name and the rest are summed as 'other'.
    """
    totals: dict[str, float] = {}
    for row in chart.table.rows:
        totals[row[chart.series]] = totals.get(row[chart.series], 0) + row[chart.y]
    ranked = sorted(totals, key=lambda s: (-totals[s], str(s)))
    keep = set(ranked if len(ranked) <= MAX_SERIES else ranked[: MAX_SERIES - 1])
    days = sorted({date.fromisoformat(row[chart.x]) for row in chart.table.rows})
    if not days:
        return {}
    calendar = [days[0] + timedelta(n) for n in range((days[-1] - days[0]).days + 1)]
    names = [str(s) for s in ranked if s in keep] + (["other"] if len(keep) < len(ranked) else [])
    series: dict[str, dict[date, int | float]] = {name: dict.fromkeys(calendar, 0) for name in names}
    for row in chart.table.rows:
        name = str(row[chart.series]) if row[chart.series] in keep else "other"
        series[name][date.fromisoformat(row[chart.x])] += row[chart.y]
    return series


def markdown_image(png: bytes, alt: str) -> str:
    """Markdown that shows `png` inline (a base64 data URI)."""
    return f"![{alt}](data:image/png;base64,{base64.b64encode(png).decode('ascii')})"
