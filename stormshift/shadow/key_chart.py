"""Inline SVG per divergent key: its result over event time on both sides.

The drill-down under a leaf stream (``report_sections.py``): for one key, a
step line of what the legacy side had emitted so far and one of the port,
over event time when the stream declares an ``event_time`` field (and every
emit of the key carries one), else over the legacy's output position (the
port's positions scaled onto the legacy's emit count, as in ``compare.py``);
a mark where the two sides first parted. The plotted value: ``latest``, the
first numeric value field as emitted; ``sum``, its running sum; ``set`` and
``list``, the running number of emits.
"""

from __future__ import annotations

from collections.abc import Sequence
from html import escape
from typing import Any

from stormshift.shadow.compare import Divergence, key_text
from stormshift.shadow.results import Group, ResultMode, ResultSpec, materialize

__all__ = ["Series", "key_series", "key_svg"]

Series = tuple[list[int], list[float]]
LEGACY_COLOR, PORT_COLOR = "#1f77b4", "#d62728"
_W, _H, _LEFT, _BOTTOM, _TOP, _RIGHT = 360, 130, 52, 22, 10, 10


def key_series(spec: ResultSpec, rows: Sequence[Sequence[Any]], keys: set[str],
               scale: float = 1.0) -> dict[str, tuple[Series, bool]]:
    """For the ``keys`` (as the report shows them) of one side's emits: ``(xs, ys)`` and
    whether ``xs`` are event times. ``scale`` maps this side's positions onto the legacy's."""
    out: dict[str, tuple[Series, bool]] = {}
    if not spec.key and spec.mode is not ResultMode.LATEST:
        return out  # a key of an unkeyed set/list is one tuple: nothing to chart over time
    for key, group in materialize(spec, rows).items():
        shown = key_text(key)
        if shown in keys:
            out[shown] = _series(spec, group, scale)
    return out


def _series(spec: ResultSpec, group: Group, scale: float) -> tuple[Series, bool]:
    timed = spec.event_time is not None and all(t is not None for t in group.times)
    xs = [int(t or 0) for t in group.times] if timed else [round(p * scale)
                                                          for p in group.positions]
    ys: list[float] = []
    running = 0.0
    for i, values in enumerate(group.history):
        first = next((v for v in values if isinstance(v, (int, float))
                      and not isinstance(v, bool)), None)
        if spec.mode is ResultMode.LATEST:
            ys.append(float(first) if first is not None else float(i + 1))
        elif spec.mode is ResultMode.SUM and first is not None:
            running += first
            ys.append(running)
        else:
            ys.append(float(i + 1))
    return (xs, ys), timed


def key_svg(stream: str, d: Divergence, legacy: Series | None, port: Series | None,
            axis: str) -> str:
    """One key's chart (either side may have no emit of the key)."""
    lines = [s for s in (legacy, port) if s is not None and s[0]]
    xs = [x for s in lines for x in s[0]] or [0]
    ys = [y for s in lines for y in s[1]] or [0.0]
    low, high = min(xs), max(xs) + 1
    bottom, top = min(0.0, min(ys)), max(ys) or 1.0
    plot_w, plot_h = _W - _LEFT - _RIGHT, _H - _TOP - _BOTTOM

    def px(x: float) -> float:
        return _LEFT + (x - low) * plot_w / (high - low)

    def py(y: float) -> float:
        return _TOP + plot_h - (y - bottom) * plot_h / ((top - bottom) or 1.0)

    parts = [
        (f'<svg xmlns="http://www.w3.org/2000/svg" class="key-chart" data-stream="{escape(stream)}"'
         f' data-key="{escape(d.key)}" data-axis="{axis}" viewBox="0 0 {_W} {_H}" width="{_W}" '
         f'height="{_H}" role="img">'),
        f"<title>{escape(d.key)} of {escape(stream)}: legacy and port over {axis}</title>",
        (f'<rect x="{_LEFT}" y="{_TOP}" width="{plot_w}" height="{plot_h}" fill="#fafafa" '
         'stroke="#ccc"/>'),
    ]
    for side, series, color in (("legacy", legacy, LEGACY_COLOR), ("port", port, PORT_COLOR)):
        if series is None or not series[0]:
            continue
        points, last = [], py(bottom)
        for x, y in zip(*series, strict=True):
            points += [f"{px(x):.1f},{last:.1f}", f"{px(x):.1f},{py(y):.1f}"]
            last = py(y)
        points.append(f"{_LEFT + plot_w:.1f},{last:.1f}")
        parts.append(f'<polyline class="{side}" points="{" ".join(points)}" fill="none" '
                     f'stroke="{color}" stroke-width="1.5"><title>{side}</title></polyline>')
    at = d.event_time if axis == "event time" and d.event_time is not None else d.position
    if low <= at < high:
        parts.append(f'<line class="parted" x1="{px(at):.1f}" x2="{px(at):.1f}" y1="{_TOP}" '
                     f'y2="{_TOP + plot_h}" stroke="#555" stroke-dasharray="3,2">'
                     "<title>first divergence</title></line>")
    parts += [
        f'<text x="{_LEFT - 4}" y="{_TOP + 9}" text-anchor="end" font-size="10">{top:,.4g}</text>',
        (f'<text x="{_LEFT - 4}" y="{_TOP + plot_h}" text-anchor="end" font-size="10">'
         f"{bottom:,.4g}</text>"),
        (f'<text x="{_LEFT}" y="{_H - 6}" font-size="10"><tspan fill="{LEGACY_COLOR}">legacy'
         f'</tspan> / <tspan fill="{PORT_COLOR}">port</tspan> over {axis}</text>'),
        "</svg>",
    ]
    return "".join(parts)
