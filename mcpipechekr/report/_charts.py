"""Line charts as inline SVG: one chart per figure, one line per task, one point per iteration.

Plain SVG written here, no library and nothing fetched: the report is one file
that opens offline. Each task's line is a `<g class="series" data-task="…">`
holding its polyline and its points (each point a `<circle>` with a `<title>`
that a browser shows on hover), so a reader or a test can find a task's line by
its id. A run where a task has no value (not evaluated, no decided attempt)
is a gap in its line.
"""

from __future__ import annotations

from collections.abc import Sequence

from mcpipechekr.report._html import attrs, esc, tag
from mcpipechekr.report._series import Metric, Series

WIDTH = 460
HEIGHT = 230
LEFT, RIGHT, TOP, BOTTOM = 56, 14, 14, 34

PALETTE = (
    "#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd",
    "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf",
)  # fmt: skip
"""Colours of the series, by task position (repeating past ten tasks)."""


def colour(position: int) -> str:
    return PALETTE[position % len(PALETTE)]


def _ceiling(value: float) -> float:
    """A round top for the y axis: 1, 2 or 5 times a power of ten, at least `value`."""
    if value <= 0:
        return 1.0
    scale = 10 ** len(str(int(value))) / 10
    for step in (1, 2, 5, 10):
        if step * scale >= value:
            return step * scale
    return value


def line_chart(metric: Metric, series: Sequence[Series], labels: Sequence[str]) -> str:
    """An SVG chart of `series` (one per task) over the runs named by `labels` (x axis, oldest first)."""
    values = [value for line in series for value in line.values if value is not None]
    top = 1.0 if metric.percent else _ceiling(max(values, default=0.0))
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
    count = max(len(labels), 1)

    def x(position: int) -> float:
        return LEFT + (plot_w / 2 if count == 1 else plot_w * position / (count - 1))

    def y(value: float) -> float:
        return TOP + plot_h * (1 - value / top)

    parts = [
        tag("title", esc(f"{metric.title} ({metric.unit}) per task and iteration")),
    ]
    for tick in (0.0, top / 2, top):
        at = f"{y(tick):.1f}"
        parts.append(f'<line class="grid"{attrs(x1=LEFT, x2=WIDTH - RIGHT, y1=at, y2=at)}/>')
        label = esc(metric.format(tick))
        parts.append(tag("text", label, class_="tick", x=LEFT - 6, y=f"{y(tick) + 4:.1f}", text_anchor="end"))
    for position, run_id in enumerate(labels):
        number = tag("title", esc(run_id)) + esc(f"#{position + 1}")
        below = HEIGHT - BOTTOM + 16
        parts.append(
            tag("text", number, class_="tick", x=f"{x(position):.1f}", y=below, text_anchor="middle")
        )
    for position, line in enumerate(series):
        parts.append(_series(line, metric, labels, colour(position), x, y))
    return tag(
        "svg",
        "".join(parts),
        class_="chart",
        data_metric=metric.key,
        viewBox=f"0 0 {WIDTH} {HEIGHT}",
        width=WIDTH,
        height=HEIGHT,
        role="img",
        xmlns="http://www.w3.org/2000/svg",
    )


def _series(line: Series, metric: Metric, labels: Sequence[str], stroke: str, x, y) -> str:  # noqa: ANN001
    body = []
    segment: list[str] = []
    segments: list[list[str]] = []
    for position, value in enumerate(line.values):
        if value is None:
            if segment:
                segments.append(segment)
            segment = []
            continue
        segment.append(f"{x(position):.1f},{y(value):.1f}")
        hover = f"{line.task_id}, #{position + 1} {labels[position]}: {metric.format(value)}"
        body.append(
            tag("circle", tag("title", esc(hover)), cx=f"{x(position):.1f}", cy=f"{y(value):.1f}", r=3.5,
                fill=stroke, data_value=f"{value:g}")
        )  # fmt: skip
    if segment:
        segments.append(segment)
    lines = [f"<polyline{attrs(points=' '.join(points), stroke=stroke)}/>" for points in segments]
    return tag("g", "".join(lines + body), class_="series", data_task=line.task_id)


def legend(task_ids: Sequence[str]) -> str:
    """The colour of each task's line, shared by every chart."""
    items = [
        tag("li", tag("span", "", class_="swatch", style=f"background:{colour(position)}") + esc(task))
        for position, task in enumerate(task_ids)
    ]
    return tag("ul", "".join(items), class_="legend")
