"""Server-side SVG charts: pure functions from numbers to markup, for pages whose CSP allows no inline style.

``line_chart`` and ``bar_chart`` take ``Series`` (a name and one value per label) and the labels of the x axis,
and return one ``<svg>`` element as a string. Colours are ``fill=``/``stroke=`` attributes (never ``style=``),
every label and name is escaped, and each point carries a ``<title>`` so a browser shows its value on hover
without any script. An empty chart (no labels, or no series) says "no data"; a single label is drawn as one dot
(line) or one bar in the middle. The y axis starts at 0 and ends at a round number above the largest value.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from html import escape

__all__ = ["PALETTE", "Series", "bar_chart", "format_value", "line_chart"]

PALETTE = ("#3b82f6", "#f59e0b", "#10b981", "#ef4444", "#8b5cf6", "#06b6d4", "#ec4899", "#84cc16")
"""The colours of the series, in order (repeated past the eighth)."""

_LEFT, _RIGHT, _TOP, _BOTTOM = 56, 12, 34, 28  # the plot's margins: axis labels left and below, title above
_MAX_X_LABELS = 6


@dataclass(frozen=True, slots=True)
class Series:
    """One line (or one colour of bars): ``values`` has one number per label of the chart."""

    name: str
    values: tuple[float, ...]


def line_chart(
    series: Sequence[Series],
    *,
    labels: Sequence[str],
    width: int = 640,
    height: int = 200,
    title: str,
    unit: str = "",
) -> str:
    """A line per series over ``labels``, with a dot at each point; ``ValueError`` when a series does not have
    one value per label."""
    frame = _Frame.make(series, labels, width, height)
    if frame is None:
        return _empty(width, height, title)
    body = [_path(frame, s, i) for i, s in enumerate(series)]
    body += [_dot(frame, s, i, n, labels[n], unit) for i, s in enumerate(series) for n in range(len(labels))]
    return _svg(width, height, title, [*_axes(frame, labels, unit), *body, *_legend(series, width)])


def bar_chart(
    series: Sequence[Series],
    *,
    labels: Sequence[str],
    width: int = 640,
    height: int = 200,
    title: str,
    unit: str = "",
) -> str:
    """Bars grouped by label, one colour per series; ``ValueError`` when a series does not have one value per
    label."""
    frame = _Frame.make(series, labels, width, height, bars=True)
    if frame is None:
        return _empty(width, height, title)
    body = [
        _bar(frame, s, i, len(series), n, labels[n], unit) for i, s in enumerate(series) for n in range(len(labels))
    ]
    return _svg(width, height, title, [*_axes(frame, labels, unit), *body, *_legend(series, width)])


def format_value(value: float, unit: str = "") -> str:
    """``value`` short for an axis or a tooltip (``1.2k``, ``3.4M``, ``2.25``, ``0.0042``), then ``unit``."""
    magnitude = abs(value)
    for limit, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if magnitude >= limit:
            text = f"{value / limit:.1f}".removesuffix(".0") + suffix
            break
    else:
        if value == int(value):
            text = f"{value:.0f}"
        elif magnitude < 1:
            text = f"{value:.2g}"  # a small cost keeps its first digits: 0.0042
        else:
            text = f"{value:.{2 if magnitude < 10 else 1}f}".rstrip("0").rstrip(".")
    return f"{text} {unit}".rstrip() if unit else text


@dataclass(frozen=True, slots=True)
class _Frame:
    """Where the plot sits and how values map to it."""

    left: float
    top: float
    width: float
    height: float
    count: int
    top_value: float
    bars: bool = False

    @classmethod
    def make(
        cls, series: Sequence[Series], labels: Sequence[str], width: int, height: int, *, bars: bool = False
    ) -> _Frame | None:
        for s in series:
            if len(s.values) != len(labels):
                raise ValueError(f"series {s.name!r} has {len(s.values)} values for {len(labels)} labels")
        if not labels or not series:
            return None
        largest = max((v for s in series for v in s.values if math.isfinite(v)), default=0.0)
        plot_w, plot_h = max(1, width - _LEFT - _RIGHT), max(1, height - _TOP - _BOTTOM)
        return cls(_LEFT, _TOP, plot_w, plot_h, len(labels), _nice_ceiling(largest), bars)

    def x(self, index: int) -> float:
        """The centre of label ``index``: its bar slot's, or spread over the width (the middle for one label)."""
        if self.bars:
            return self.left + self.width * (index + 0.5) / self.count
        if self.count == 1:
            return self.left + self.width / 2
        return self.left + self.width * index / (self.count - 1)

    def y(self, value: float) -> float:
        safe = max(0.0, value) if math.isfinite(value) else 0.0
        return self.top + self.height * (1 - min(safe, self.top_value) / self.top_value)


def _nice_ceiling(value: float) -> float:
    """The smallest 1, 2 or 5 times a power of ten at or above ``value`` (1 for nothing to show)."""
    if value <= 0:
        return 1.0
    power = 10.0 ** math.floor(math.log10(value))
    return next(step * power for step in (1, 2, 5, 10) if step * power >= value)


def _axes(frame: _Frame, labels: Sequence[str], unit: str) -> list[str]:
    bottom = frame.top + frame.height
    out = [_line(frame.left, bottom, frame.left + frame.width, bottom, "#9ca3af")]
    for fraction in (0.0, 0.5, 1.0):
        value = frame.top_value * fraction
        y = frame.y(value)
        if fraction:
            out.append(_line(frame.left, y, frame.left + frame.width, y, "#e5e7eb"))
        out.append(_text(frame.left - 6, y + 4, format_value(value, unit), anchor="end"))
    for index in _label_indexes(len(labels)):
        out.append(_text(frame.x(index), bottom + 16, labels[index], anchor="middle"))
    return out


def _label_indexes(count: int) -> list[int]:
    """At most ``_MAX_X_LABELS`` evenly spread label positions, always the first and the last."""
    if count <= _MAX_X_LABELS:
        return list(range(count))
    step = (count - 1) / (_MAX_X_LABELS - 1)
    return sorted({round(step * n) for n in range(_MAX_X_LABELS)})


def _path(frame: _Frame, series: Series, index: int) -> str:
    if frame.count < 2:
        return ""
    points = " ".join(f"{frame.x(n):.1f},{frame.y(v):.1f}" for n, v in enumerate(series.values))
    return f'<polyline fill="none" stroke="{_colour(index)}" stroke-width="2" points="{points}"/>'


def _dot(frame: _Frame, series: Series, index: int, n: int, label: str, unit: str) -> str:
    tip = _tip(series, label, series.values[n], unit)
    x, y = frame.x(n), frame.y(series.values[n])
    return f'<circle cx="{x:.1f}" cy="{y:.1f}" r="3" fill="{_colour(index)}"><title>{tip}</title></circle>'


def _bar(frame: _Frame, series: Series, index: int, groups: int, n: int, label: str, unit: str) -> str:
    slot = frame.width / frame.count
    bar_w = max(1.0, slot * 0.8 / groups)
    x = frame.x(n) - slot * 0.4 + bar_w * index
    y = frame.y(series.values[n])
    h = frame.top + frame.height - y
    tip = _tip(series, label, series.values[n], unit)
    return (
        f'<rect x="{x:.1f}" y="{y:.1f}" width="{bar_w:.1f}" height="{h:.1f}" fill="{_colour(index)}">'
        f"<title>{tip}</title></rect>"
    )


def _tip(series: Series, label: str, value: float, unit: str) -> str:
    return escape(f"{series.name}, {label}: {format_value(value, unit)}")


def _legend(series: Sequence[Series], width: int) -> list[str]:
    out: list[str] = []
    x = float(_LEFT)
    for index, s in enumerate(series):
        out.append(f'<rect x="{x:.1f}" y="20" width="10" height="10" fill="{_colour(index)}"/>')
        out.append(_text(x + 14, 29, s.name))
        x += 24 + 7 * len(s.name)
        if x > width - 40:
            break
    return out


def _empty(width: int, height: int, title: str) -> str:
    return _svg(width, height, title, [_text(width / 2, height / 2, "no data", anchor="middle", fill="#6b7280")])


def _svg(width: int, height: int, title: str, body: list[str]) -> str:
    name = escape(title)
    head = (
        f'<svg xmlns="http://www.w3.org/2000/svg" class="chart" role="img" aria-label="{name}" '
        f'viewBox="0 0 {width} {height}" width="{width}" height="{height}" font-family="sans-serif" font-size="11">'
    )
    heading = _text(_LEFT, 13, title, weight="bold")
    return "".join([head, f"<title>{name}</title>", heading, *(part for part in body if part), "</svg>"])


def _line(x1: float, y1: float, x2: float, y2: float, colour: str) -> str:
    return f'<line x1="{x1:.1f}" y1="{y1:.1f}" x2="{x2:.1f}" y2="{y2:.1f}" stroke="{colour}" stroke-width="1"/>'


def _text(x: float, y: float, text: str, *, anchor: str = "start", fill: str = "#374151", weight: str = "") -> str:
    bold = f' font-weight="{weight}"' if weight else ""
    return f'<text x="{x:.1f}" y="{y:.1f}" text-anchor="{anchor}" fill="{fill}"{bold}>{escape(text)}</text>'


def _colour(index: int) -> str:
    return PALETTE[index % len(PALETTE)]
