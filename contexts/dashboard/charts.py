"""Chart geometry for the dashboard: scales, ticks, and the shapes the templates draw.

The charts are SVG drawn on the server: the numbers are already here, nothing
runs in the browser (the pages' CSP allows no inline script), and each chart
carries its own text alternative (a <title>/<desc>, and a table or list beside
it). Every function here is pure: values in, coordinates and labels out.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import date, datetime

# The plot sits inside the SVG with room on the left for the y labels and
# below for the x labels.
WIDTH, HEIGHT = 480, 150
LEFT, RIGHT, TOP, BOTTOM = 44, 20, 10, 22


# --- scales and ticks ---------------------------------------------------------------------


def nice_step(span: float, count: int = 4) -> float:
    """A round step (1, 2, 2.5 or 5 times a power of ten) that cuts `span` into about `count` parts."""
    if span <= 0:
        return 1.0
    raw = span / max(count, 1)
    magnitude = 10 ** math.floor(math.log10(raw))
    for factor in (1.0, 2.0, 2.5, 5.0, 10.0):
        if raw <= factor * magnitude * (1 + 1e-9):
            return factor * magnitude
    return 10.0 * magnitude


def nice_ticks(peak: float, count: int = 4, *, min_step: float = 0.0) -> list[float]:
    """0, step, 2·step … up to a round value at or above `peak` (0..1 when empty): the
    step that overshoots the peak least, then gives nearest `count` parts. `min_step`
    1 keeps counts on whole numbers."""
    peak = peak if peak > 0 else 1.0
    exponent = math.floor(math.log10(peak))
    best: tuple[tuple[float, int], float, int] | None = None
    for power in (exponent - 2, exponent - 1, exponent):
        for factor in (1.0, 2.0, 2.5, 5.0, 10.0):
            step = factor * 10.0**power
            if step < min_step or (min_step and step != int(step)):
                continue
            parts = math.ceil(peak / step - 1e-9)
            if not 1 <= parts <= count + 2:
                continue
            key = (round(parts * step, 12), abs(parts - count))
            if best is None or key < best[0]:
                best = (key, step, parts)
    if best is None:  # no round step fits (min_step above the peak): one part of min_step
        step = max(nice_step(peak, count), min_step)
        best = ((0.0, 0), step, math.ceil(peak / step - 1e-9))
    _, step, parts = best
    return [round(i * step, 12) for i in range(parts + 1)]


def decimals_for(step: float) -> int:
    """How many decimals make each multiple of `step` print distinctly."""
    for places in range(7):
        if abs(round(step, places) - step) < 1e-9:
            return places
    return 6


def number_label(value: float, *, step: float, percent: bool = False) -> str:
    if percent:
        return f"{value * 100:.{decimals_for(step * 100)}f}%"
    return f"{value:,.{decimals_for(step)}f}"


@dataclass(frozen=True)
class Tick:
    pos: float  # in SVG units along its axis
    label: str


@dataclass(frozen=True)
class Scale:
    """Linear: `lo`..`hi` onto `start`..`end` (end < start for a y axis that grows up)."""

    lo: float
    hi: float
    start: float
    end: float

    def __call__(self, value: float) -> float:
        if self.hi == self.lo:
            return self.start
        return round(
            self.start + (value - self.lo) / (self.hi - self.lo) * (self.end - self.start), 2
        )


def value_axis(
    peak: float, *, start: float, end: float, percent: bool = False, min_step: float = 0.0
) -> tuple[Scale, list[Tick]]:
    """A scale from 0 to a round value above `peak`, and its labelled ticks."""
    ticks = nice_ticks(peak, min_step=min_step)
    step = ticks[1] - ticks[0] if len(ticks) > 1 else 1.0
    scale = Scale(lo=0.0, hi=ticks[-1], start=start, end=end)
    return scale, [
        Tick(pos=scale(t), label=number_label(t, step=step, percent=percent)) for t in ticks
    ]


def day_label(day: date) -> str:
    return f"{day:%b} {day.day}"


@dataclass(frozen=True)
class Frame:
    """The SVG's size and, inside it, the plot's edges (SVG units, y growing down)."""

    width: int
    height: int
    left: float
    right: float
    top: float
    bottom: float

    @classmethod
    def inside(cls, width: int = WIDTH, height: int = HEIGHT) -> Frame:
        """The plot inset by the margins the axis labels need."""
        return cls(width, height, LEFT, width - RIGHT, TOP, height - BOTTOM)


# --- bars over days -----------------------------------------------------------------------


@dataclass(frozen=True)
class Bar:
    x: float
    y: float
    width: float
    height: float
    label: str
    value: float
    title: str


@dataclass(frozen=True)
class BarChart:
    frame: Frame
    bars: tuple[Bar, ...]
    y_ticks: tuple[Tick, ...]
    x_ticks: tuple[Tick, ...]
    peak_label: str
    first_label: str
    last_label: str

    @property
    def empty(self) -> bool:
        return not any(bar.value for bar in self.bars)


def shown(value: float, *, percent: bool = False) -> str:
    if percent:
        return f"{value:.1%}" if 0 < value < 0.1 else f"{value:.0%}"
    return f"{value:,g}"


def bar_chart(
    points: Sequence[tuple[date, float]],
    *,
    percent: bool = False,
    width: int = WIDTH,
    height: int = HEIGHT,
) -> BarChart:
    """Bars for (day, value) points, left to right; the y axis runs 0 → a round value
    at or above the data's peak (rates too: a 1 % day is as tall as the data allows).
    Values are counts unless `percent` (then 0..1 rates)."""
    frame = Frame.inside(width, height)
    left, right, top, bottom = frame.left, frame.right, frame.top, frame.bottom
    peak = max((v for _, v in points), default=0.0)
    y, y_ticks = value_axis(
        peak, start=bottom, end=top, percent=percent, min_step=0.0 if percent else 1.0
    )
    slot = (right - left) / max(len(points), 1)
    gap = min(2.0, slot / 4)
    bars = []
    for i, (day, value) in enumerate(points):
        h = bottom - y(value)
        h = max(h, 1.0) if value else 0.0  # a non-zero day is never invisible
        bars.append(
            Bar(
                x=round(left + i * slot + gap / 2, 2),
                y=round(bottom - h, 2),
                width=round(max(slot - gap, 0.5), 2),
                height=round(h, 2),
                label=day.isoformat(),
                value=value,
                title=f"{day.isoformat()}: {shown(value, percent=percent)}",
            )
        )
    every = max(1, math.ceil(len(points) / 6))  # about six dates, counted back from the last
    x_ticks = [
        Tick(pos=round(left + (i + 0.5) * slot, 2), label=day_label(day))
        for i, (day, _) in enumerate(points)
        if (len(points) - 1 - i) % every == 0
    ]
    return BarChart(
        frame=frame,
        bars=tuple(bars),
        y_ticks=tuple(y_ticks),
        x_ticks=tuple(x_ticks),
        peak_label=shown(peak, percent=percent),
        first_label=points[0][0].isoformat() if points else "",
        last_label=points[-1][0].isoformat() if points else "",
    )


# --- horizontal bars: one rate per category -----------------------------------------------


@dataclass(frozen=True)
class Row:
    y: float
    width: float
    label: str
    value: float
    title: str


@dataclass(frozen=True)
class RateChart:
    frame: Frame
    band: float
    rows: tuple[Row, ...]
    ticks: tuple[Tick, ...]


def rate_chart(rates: Sequence[tuple[str, float, str]], *, width: int = WIDTH) -> RateChart:
    """One horizontal bar per (label, rate, note); the x axis runs 0 → a round rate at
    or above the highest, so small rates stay readable side by side."""
    band, left, right = 22.0, 96.0, width - 16.0
    bottom = TOP + band * max(len(rates), 1)
    x, ticks = value_axis(
        max((r for _, r, _ in rates), default=0.0), start=left, end=right, percent=True
    )
    rows = tuple(
        Row(
            y=round(TOP + i * band + 3, 2),
            width=round(x(rate) - left, 2),
            label=label,
            value=rate,
            title=f"{label}: {shown(rate, percent=True)} ({note})",
        )
        for i, (label, rate, note) in enumerate(rates)
    )
    return RateChart(
        frame=Frame(width, int(bottom + BOTTOM), left, right, TOP, bottom),
        band=band,
        rows=rows,
        ticks=tuple(ticks),
    )


# --- a line over time with marks ----------------------------------------------------------


@dataclass(frozen=True)
class Point:
    x: float
    y: float
    title: str
    kind: str


@dataclass(frozen=True)
class LineChart:
    frame: Frame
    past: str  # SVG polyline points up to now
    future: str  # and from now on
    now_x: float
    threshold_y: float | None
    marks: tuple[Point, ...]
    y_ticks: tuple[Tick, ...]
    x_ticks: tuple[Tick, ...]


def _stacked(
    marks: Sequence[tuple[datetime, str, str]], x: Scale, *, base: float, gap: float = 10.0
) -> tuple[Point, ...]:
    """Marks on the time axis; marks at (nearly) the same moment stack upwards, up to a
    limit, so each stays visible and hoverable."""
    points: list[Point] = []
    cluster_x, height = -1e9, 0
    for t, title, kind in sorted(marks, key=lambda m: m[0]):
        px = x(t.timestamp())
        if px - cluster_x < gap / 2:
            height = min(height + 1, 8)
        else:
            cluster_x, height = px, 0
        points.append(Point(x=px, y=round(base - height * gap, 2), title=title, kind=kind))
    return tuple(points)


def line_chart(
    samples: Sequence[tuple[datetime, float]],
    *,
    now: datetime,
    marks: Sequence[tuple[datetime, str, str]] = (),
    threshold: float | None = None,
    width: int = WIDTH,
    height: int = HEIGHT,
) -> LineChart:
    """A 0..1 value sampled over time (solid up to `now`, dashed after), with dated
    `marks` (moment, title, kind) pinned to the time axis."""
    frame = Frame.inside(width, height)
    left, right, top, bottom = frame.left, frame.right, frame.top, frame.bottom
    start = min([t for t, _ in samples] + [t for t, _, _ in marks] + [now])
    end = max([t for t, _ in samples] + [now])
    x = Scale(lo=start.timestamp(), hi=end.timestamp(), start=left, end=right)
    y, y_ticks = value_axis(1.0, start=bottom, end=top)

    def points(part: Sequence[tuple[datetime, float]]) -> str:
        return " ".join(f"{x(t.timestamp())},{y(v)}" for t, v in part)

    past = [s for s in samples if s[0] <= now]
    future = [s for s in samples if s[0] >= now]
    days = (end - start).days
    every = nice_step(max(days, 1), 5)
    x_ticks = []
    for i in range(int(days // every) + 1):
        moment = start + (end - start) * (i * every / max(days, 1))
        x_ticks.append(Tick(pos=x(moment.timestamp()), label=day_label(moment.date())))
    return LineChart(
        frame=frame,
        past=points(past),
        future=points(future),
        now_x=x(now.timestamp()),
        threshold_y=y(threshold) if threshold is not None else None,
        marks=_stacked(marks, x, base=bottom - 6),
        y_ticks=tuple(y_ticks),
        x_ticks=tuple(x_ticks),
    )


# --- a forest laid out by the span each node covers ---------------------------------------


@dataclass
class Span:
    """What `tree_chart` needs of a node: the columns it covers, its level, its children."""

    key: str
    start: int
    end: int
    level: int
    title: str
    active: bool = False
    children: list[Span] = field(default_factory=list)


@dataclass(frozen=True)
class Box:
    x: float
    y: float
    width: float
    height: float
    key: str
    title: str
    label: str  # shown inside the box when it fits, else ""
    active: bool

    @property
    def cx(self) -> float:
        return round(self.x + self.width / 2, 2)


@dataclass(frozen=True)
class Edge:
    x1: float
    y1: float
    x2: float
    y2: float


@dataclass(frozen=True)
class TreeChart:
    width: int
    height: int
    boxes: tuple[Box, ...]
    edges: tuple[Edge, ...]
    ticks: tuple[Tick, ...]


def tree_chart(roots: Sequence[Span], *, width: int = WIDTH) -> TreeChart:
    """Boxes across the columns each node covers, the deepest level on top, a line
    from each node down to each node it condensed."""
    nodes: list[Span] = []
    stack = list(roots)
    while stack:
        node = stack.pop()
        nodes.append(node)
        stack.extend(node.children)
    if not nodes:
        return TreeChart(width=width, height=0, boxes=(), edges=(), ticks=())
    first = min(n.start for n in nodes)
    last = max(n.end for n in nodes)
    levels = max(n.level for n in nodes) + 1
    row, box_h, left, right = 44.0, 26.0, 8.0, width - 8.0
    column = (right - left) / (last - first + 1)
    height = int(TOP + (levels - 1) * row + box_h + BOTTOM)

    def place(n: Span) -> Box:
        x0 = left + (n.start - first) * column + 1
        w = max((n.end - n.start + 1) * column - 2, 2.0)
        y0 = TOP + (levels - 1 - n.level) * row
        fits = len(n.key) * 6.5 + 6 <= w
        label = n.key if fits else ""
        return Box(round(x0, 2), y0, round(w, 2), box_h, n.key, n.title, label, n.active)

    placed = {id(n): place(n) for n in nodes}
    edges = []
    for n in nodes:
        parent = placed[id(n)]
        for child in n.children:
            c = placed[id(child)]
            edges.append(
                Edge(
                    x1=round(parent.x + parent.width / 2, 2),
                    y1=parent.y + parent.height,
                    x2=round(c.x + c.width / 2, 2),
                    y2=c.y,
                )
            )
    every = max(1, math.ceil((last - first + 1) / 10))
    ticks = tuple(
        Tick(pos=round(left + (t - first + 0.5) * column, 2), label=str(t))
        for t in range(first, last + 1)
        if (t - first) % every == 0
    )
    boxes = sorted(placed.values(), key=lambda b: (b.y, b.x))
    return TreeChart(
        width=width, height=height, boxes=tuple(boxes), edges=tuple(edges), ticks=ticks
    )
