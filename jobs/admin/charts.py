"""The charts of the "Background jobs" page: how the queues behaved over the last hour (by
minute) and the last day (by 15 minutes), overall or for the queue the list is filtered by.

    finished   tries finished by outcome (succeeded, retried, failed), stacked bars
    wait       due → started, p50 and p95
    run        started → finished, p50 and p95
    depth      due and running jobs, sampled once a minute

The figures come from the rollup (``jobs.rollup``): three grouped reads of a few thousand
rows at most, whatever the size of the jobs table, kept for ``CACHE_SECONDS`` in this
process, so the page's refresh every few seconds reads them again at most that often.
They are drawn here as SVG, in the page: no script, no external resource, nothing the
page's Content-Security-Policy would block (classes, not style attributes; the colours are
the page's stylesheet's, readable in the light and the dark theme). Each bar and point
has a title with its numbers, for people who would rather read than look.
"""

from __future__ import annotations

import functools
import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta, tzinfo

from django.utils import timezone
from django.utils.html import escape, format_html
from django.utils.safestring import SafeString, mark_safe

from jobs import rollup
from jobs.rollup import Point, Window

CACHE_SECONDS = 30.0
WIDTH, HEIGHT = 360, 140
LEFT, RIGHT, TOP, BOTTOM = 44, 8, 10, 22  # the plot's margins, for the axis labels

_cache: dict[tuple[str, str | None], tuple[float, list[Chart]]] = {}


@dataclass(frozen=True)
class Chart:
    key: str
    title: str
    svg: SafeString
    legend: tuple[tuple[str, str], ...]  # (css class, label)


@dataclass(frozen=True)
class Charts:
    """Every chart of both windows, for one queue or all."""

    queue: str | None
    windows: tuple[tuple[Window, list[Chart]], ...]


def charts_for(queue: str | None, now: datetime | None = None) -> Charts:
    return Charts(queue, tuple((window, _charts(window, queue, now)) for window in rollup.WINDOWS.values()))


def _charts(window: Window, queue: str | None, now: datetime | None) -> list[Chart]:
    key = (window.name, queue)
    cached = _cache.get(key)
    if now is None and cached is not None and cached[0] > time.monotonic():
        return cached[1]
    points = rollup.series(window, queue, now)
    drawn = [
        _finished(points, window),
        _percentiles(points, window, "wait", "Wait (due → started)", lambda point: point.wait),
        _percentiles(points, window, "run", "Run time (started → finished)", lambda point: point.run),
        _depth(points, window),
    ]
    if now is None:
        _cache[key] = (time.monotonic() + CACHE_SECONDS, drawn)
    return drawn


def clear_cache() -> None:
    _cache.clear()


# --- the four charts -----------------------------------------------------------------------


def _finished(points: list[Point], window: Window) -> Chart:
    order = (rollup.SUCCEEDED, rollup.RETRIED, rollup.FAILED)
    top = max((sum(point.outcomes.values()) for point in points), default=0)
    plot = _Plot(len(points), top)
    parts: list[str] = []
    for index, point in enumerate(points):
        total = sum(point.outcomes.values())
        if not total:
            continue
        title = f"{_moment(point.start, window)}: " + ", ".join(
            f"{point.outcomes[outcome]:,} {outcome}" for outcome in order
        )
        below = 0
        bars = []
        for outcome in order:
            count = point.outcomes[outcome]
            if count:
                bars.append(plot.bar(index, below, count, f"chart-{outcome}"))
                below += count
        parts.append(f"<g><title>{escape(title)}</title>{''.join(bars)}</g>")
    return Chart(
        "finished",
        "Tries finished",
        plot.svg(parts, _count(top), window, points, "Tries finished, by outcome"),
        (("chart-succeeded", "succeeded"), ("chart-retried", "retried"), ("chart-failed", "failed")),
    )


def _percentiles(
    points: list[Point],
    window: Window,
    key: str,
    title: str,
    measure: Callable[[Point], tuple[float | None, float | None]],
) -> Chart:
    p50 = [measure(point)[0] for point in points]
    p95 = [measure(point)[1] for point in points]
    present = [value for value in p50 + p95 if value is not None]
    top = max(present, default=0.0)
    # A log scale: a p95 a hundred times the p50 leaves the p50 readable.
    plot = _Plot(len(points), top, low=min(present, default=0.001) / 1.5)
    parts = [plot.line(p95, "chart-p95"), plot.line(p50, "chart-p50")]
    for index, point in enumerate(points):
        if p50[index] is None:
            continue
        label = (
            f"{_moment(point.start, window)}: p50 {_duration(p50[index])}, p95 {_duration(p95[index])} "
            f"({point.tries:,} tries)"
        )
        parts.append(plot.hover(index, label))
    return Chart(
        key,
        title,
        plot.svg(
            parts,
            _duration(top) if top else "—",
            window,
            points,
            f"{title}, p50 and p95 (log scale)",
            _duration(plot.low) if present else "0",
        ),
        (("chart-p50", "p50"), ("chart-p95", "p95")),
    )


def _depth(points: list[Point], window: Window) -> Chart:
    due = [None if point.due is None else float(point.due) for point in points]
    running = [None if point.running is None else float(point.running) for point in points]
    top = max((value for value in due + running if value is not None), default=0.0)
    plot = _Plot(len(points), top)
    parts = [plot.line(due, "chart-due"), plot.line(running, "chart-running")]
    for index, point in enumerate(points):
        if point.due is None:
            continue
        parts.append(
            plot.hover(index, f"{_moment(point.start, window)}: {point.due:,} due, {point.running:,} running")
        )
    return Chart(
        "depth",
        "Queue depth",
        plot.svg(parts, _count(top), window, points, "Queue depth: due and running jobs"),
        (("chart-due", "due"), ("chart-running", "running")),
    )


# --- drawing ---------------------------------------------------------------------------------


class _Plot:
    """Coordinates of one chart: ``count`` intervals across, 0 to ``top`` up."""

    def __init__(self, count: int, top: float, low: float | None = None) -> None:
        self.count = max(1, count)
        self.top = top or 1.0
        self.low = low  # a log scale from ``low`` up, or a linear one from 0
        self.inner_width = WIDTH - LEFT - RIGHT
        self.inner_height = HEIGHT - TOP - BOTTOM
        self.step = self.inner_width / self.count

    def x(self, index: int) -> float:
        return LEFT + index * self.step

    def y(self, value: float) -> float:
        if self.low is not None:
            low = math.log10(max(self.low, 1e-6))
            high = max(math.log10(self.top), low + 1e-9)
            share = (math.log10(max(min(value, self.top), self.low)) - low) / (high - low)
            return TOP + self.inner_height * (1 - share)
        return TOP + self.inner_height * (1 - min(value, self.top) / self.top)

    def bar(self, index: int, below: float, value: float, css: str) -> str:
        y_top, y_bottom = self.y(below + value), self.y(below)
        width = max(1.0, self.step - 1)
        return (
            f'<rect class="{css}" x="{self.x(index):.1f}" y="{y_top:.1f}" '
            f'width="{width:.1f}" height="{max(0.5, y_bottom - y_top):.1f}"/>'
        )

    def line(self, values: list[float | None], css: str) -> str:
        """A line through the intervals that have a value (a gap where one has none)."""
        runs: list[list[str]] = [[]]
        for index, value in enumerate(values):
            if value is None:
                if runs[-1]:
                    runs.append([])
                continue
            runs[-1].append(f"{self.x(index) + self.step / 2:.1f},{self.y(value):.1f}")
        drawn = []
        for run in runs:
            if len(run) == 1:
                x, y = run[0].split(",")
                drawn.append(f'<circle class="{css} chart-dot" cx="{x}" cy="{y}" r="1.5"/>')
            elif run:
                drawn.append(f'<polyline class="{css} chart-line" points="{" ".join(run)}"/>')
        return "".join(drawn)

    def hover(self, index: int, label: str) -> str:
        """An invisible column over the interval whose title says its numbers."""
        return (
            f'<rect class="chart-hover" x="{self.x(index):.1f}" y="{TOP}" width="{self.step:.1f}" '
            f'height="{self.inner_height}"><title>{escape(label)}</title></rect>'
        )

    def svg(
        self,
        parts: list[str],
        top_label: str,
        window: Window,
        points: list[Point],
        label: str,
        bottom_label: str = "0",
    ) -> SafeString:
        base = TOP + self.inner_height
        first, last = points[0].start, points[-1].start
        middle = points[len(points) // 2].start
        axes = (
            f'<line class="chart-grid" x1="{LEFT}" y1="{TOP}" x2="{WIDTH - RIGHT}" y2="{TOP}"/>'
            f'<line class="chart-axis" x1="{LEFT}" y1="{base}" x2="{WIDTH - RIGHT}" y2="{base}"/>'
            f'<text class="chart-label" x="{LEFT - 4}" y="{TOP + 4}" text-anchor="end">{escape(top_label)}</text>'
            f'<text class="chart-label" x="{LEFT - 4}" y="{base}" text-anchor="end">{escape(bottom_label)}</text>'
            f'<text class="chart-label" x="{LEFT}" y="{HEIGHT - 6}">{_clock(first, window)}</text>'
            f'<text class="chart-label" x="{LEFT + self.inner_width / 2}" y="{HEIGHT - 6}" '
            f'text-anchor="middle">{_clock(middle, window)}</text>'
            f'<text class="chart-label" x="{WIDTH - RIGHT}" y="{HEIGHT - 6}" text-anchor="end">'
            f"{_clock(last, window)}</text>"
        )
        return format_html(
            '<svg class="chart-svg" viewBox="0 0 {} {}" role="img" aria-label="{}">{}</svg>',
            WIDTH,
            HEIGHT,
            label,
            mark_safe(axes + "".join(parts)),  # noqa: S308 - built above from numbers and escaped text
        )


def _clock(moment: datetime, window: Window) -> str:
    return _label(moment, 0, timezone.get_current_timezone())


def _moment(moment: datetime, window: Window) -> str:
    return _label(moment, window.span, timezone.get_current_timezone())


@functools.lru_cache(maxsize=2048)
def _label(moment: datetime, span: int, zone: tzinfo) -> str:
    """``12:03``, or ``12:00–12:15`` for an interval of ``span`` > 1 minutes, in ``zone``
    (made once for the four charts and the refreshes that follow)."""
    start = timezone.localtime(moment, zone)
    if span <= 1:
        return start.strftime("%H:%M")
    return f"{start:%H:%M}–{start + timedelta(minutes=span):%H:%M}"


def _count(value: float) -> str:
    if value >= 1_000_000:
        return f"{value / 1_000_000:.1f}M"
    if value >= 10_000:
        return f"{value / 1000:.0f}k"
    return f"{value:,.0f}"


def _duration(seconds: float | None) -> str:
    if seconds is None:
        return "—"
    if seconds < 1:
        return f"{seconds * 1000:.0f} ms" if seconds >= 0.001 else "<1 ms"
    if seconds < 60:
        return f"{seconds:.1f} s"
    if seconds < 3600:
        return f"{seconds / 60:.1f} min"
    return f"{seconds / 3600:.1f} h"
