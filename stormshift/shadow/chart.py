"""An inline SVG: when the two sides of one leaf stream diverged.

Each divergent key is placed at its *first divergence* (``compare.py``): in
event time when the stream declares an ``event_time`` field (and every
divergence carries one), else at its position in the legacy's emits. The
chart bins them (bars stacked by cause) and draws the cumulative number of
divergent keys as a line. Plain SVG text, no script, no external asset.
"""

from __future__ import annotations

from datetime import UTC, datetime
from html import escape

from stormshift.shadow.classify import (
    CRASH_LOST_STATE,
    LEGACY_UNFINISHED,
    LIVE_DIFFERENCE,
    NONDETERMINISTIC,
    NOT_COMPARABLE,
    PORT_DIFFERENCE,
    REPLAY_DOUBLE_COUNT,
    ROUNDING,
    STORM_OTHER,
)
from stormshift.shadow.compare import StreamComparison

__all__ = ["CAUSE_COLORS", "axis_of", "divergence_svg"]

CAUSE_COLORS = {
    PORT_DIFFERENCE: "#d62728",
    REPLAY_DOUBLE_COUNT: "#ff7f0e",
    CRASH_LOST_STATE: "#9467bd",
    STORM_OTHER: "#8c564b",
    LEGACY_UNFINISHED: "#e377c2",
    LIVE_DIFFERENCE: "#1f77b4",
    NONDETERMINISTIC: "#bcbd22",
    ROUNDING: "#7f7f7f",
    NOT_COMPARABLE: "#17becf",
}
_BINS = 40
_W, _H, _LEFT, _BOTTOM, _TOP, _RIGHT = 720, 220, 48, 36, 14, 12


def axis_of(comparison: StreamComparison) -> str:
    """``"event time"`` or ``"legacy output position"``: the chart's x axis."""
    if comparison.spec.event_time and comparison.divergences and all(
        d.event_time is not None for d in comparison.divergences
    ):
        return "event time"
    return "legacy output position"


def divergence_svg(comparison: StreamComparison) -> str:
    """The chart of one stream as an ``<svg>`` element."""
    axis = axis_of(comparison)
    if axis == "event time":
        xs = [int(d.event_time or 0) for d in comparison.divergences]
        low, high = min(xs), max(xs) + 1
    else:
        xs = [d.position for d in comparison.divergences]
        low, high = 0, max([comparison.legacy_emits, *[x + 1 for x in xs], 1])
    width = max(high - low, 1)
    bins: list[dict[str, int]] = [{} for _ in range(_BINS)]
    for x, d in zip(xs, comparison.divergences, strict=True):
        slot = min(_BINS - 1, (x - low) * _BINS // width)
        bins[slot][d.cause] = bins[slot].get(d.cause, 0) + 1
    tallest = max([sum(b.values()) for b in bins] + [1])
    plot_w, plot_h = _W - _LEFT - _RIGHT, _H - _TOP - _BOTTOM
    bar_w = plot_w / _BINS
    parts = [
        (f'<svg xmlns="http://www.w3.org/2000/svg" class="divergence-chart" '
        f'data-stream="{escape(comparison.label)}" data-divergences="{len(xs)}" '
        f'data-axis="{axis}" viewBox="0 0 {_W} {_H}" width="{_W}" height="{_H}" role="img">'),
        f"<title>divergent keys of {escape(comparison.label)} over {axis}</title>",
        (f'<rect x="{_LEFT}" y="{_TOP}" width="{plot_w}" height="{plot_h}" fill="#fafafa" '
        'stroke="#ccc"/>'),
    ]
    for i, counts in enumerate(bins):
        y: float = _TOP + plot_h
        for cause in sorted(counts):
            h = counts[cause] * plot_h / tallest
            y -= h
            parts.append(
                f'<rect class="bar" x="{_LEFT + i * bar_w + 1:.1f}" y="{y:.1f}" '
                f'width="{bar_w - 2:.1f}" height="{h:.1f}" '
                f'fill="{CAUSE_COLORS.get(cause, "#555")}"><title>{counts[cause]} '
                f"{escape(cause)}</title></rect>"
            )
    parts.append(_cumulative(bins, len(xs), plot_w, plot_h, bar_w))
    parts.extend(_axes(axis, low, high, tallest, plot_w, plot_h))
    if not xs:
        parts.append(f'<text x="{_LEFT + plot_w / 2}" y="{_TOP + plot_h / 2}" '
                     'text-anchor="middle" fill="#2ca02c">no divergence</text>')
    parts.append("</svg>")
    return "".join(parts)


def _cumulative(bins: list[dict[str, int]], total: int, plot_w: float, plot_h: float,
                bar_w: float) -> str:
    if not total:
        return ""
    points, running = [f"{_LEFT},{_TOP + plot_h}"], 0
    for i, counts in enumerate(bins):
        running += sum(counts.values())
        points.append(f"{_LEFT + (i + 1) * bar_w:.1f},{_TOP + plot_h - running * plot_h / total:.1f}")
    return (f'<polyline class="cumulative" points="{" ".join(points)}" fill="none" '
            'stroke="#1f77b4" stroke-width="1.5"><title>cumulative divergent keys (right: '
            f"{total})</title></polyline>")


def _axes(axis: str, low: int, high: int, tallest: int, plot_w: float, plot_h: float) -> list[str]:
    base = _TOP + plot_h
    out = [
        f'<text x="{_LEFT - 6}" y="{_TOP + 10}" text-anchor="end" font-size="11">{tallest}</text>',
        f'<text x="{_LEFT - 6}" y="{base}" text-anchor="end" font-size="11">0</text>',
        f'<text x="{_LEFT}" y="{base + 14}" font-size="11">{escape(_label(axis, low))}</text>',
        (f'<text x="{_LEFT + plot_w}" y="{base + 14}" text-anchor="end" font-size="11">'
        f"{escape(_label(axis, high))}</text>"),
        (f'<text x="{_LEFT + plot_w / 2}" y="{base + 30}" text-anchor="middle" font-size="12">'
        f"first divergence per key, over {axis}</text>"),
    ]
    return out


def _label(axis: str, value: int) -> str:
    if axis == "event time":
        return datetime.fromtimestamp(value / 1000, tz=UTC).strftime("%Y-%m-%d %H:%M:%S")
    return f"{value:,}"
