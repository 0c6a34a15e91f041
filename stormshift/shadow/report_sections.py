"""The HTML report's per-component drill-down: each component's leaf streams and final state.

Under one ``section.component[data-component]`` per bolt that has a leaf
stream or state: per leaf stream (``section.stream[data-stream]``) its result
rule, per-field delta statistics, the chart of its divergent keys over event
time (``chart.py``), the per-key divergences (``table.divergences``) and, for
the largest divergent keys, each key's own chart of both sides over event time
(``svg.key-chart[data-key]``, ``key_chart.py``); per final-state entry
(``section.state[data-state]``) its key counts and divergent keys
(``table.state-divergences``). Shared table helpers live here too.
"""

from __future__ import annotations

import json
from html import escape
from typing import Any

from stormshift.shadow.chart import axis_of, divergence_svg
from stormshift.shadow.compare import StreamComparison
from stormshift.shadow.final_state import StateComparison
from stormshift.shadow.key_chart import key_series, key_svg

__all__ = ["KEY_CHARTS", "MAX_ROWS", "component_sections", "table"]

MAX_ROWS = 1000
#: divergent keys per leaf stream that get their own chart
KEY_CHARTS = 6


def table(cls: str, headers: list[str], rows: list[list[str]], table_id: str = "") -> str:
    ident = f" id='{table_id}'" if table_id else ""
    head = "".join(f"<th class='{'l' if i == 0 else ''}'>{escape(h)}</th>"
                   for i, h in enumerate(headers))
    body = "".join("<tr>" + "".join(f"<td class='{'l' if i == 0 else ''}'>{c}</td>"
                                    for i, c in enumerate(row)) + "</tr>" for row in rows)
    return f"<table class='{cls}'{ident}><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def component_sections(result: Any) -> str:
    """One drill-down section per component with a leaf stream or a final-state entry."""
    names: list[str] = list(result.legacy.components) if result.legacy is not None else []
    for item in [*result.streams, *result.states]:
        if item.component not in names:
            names.append(item.component)
    out = []
    for name in names:
        streams = [(i, s) for i, s in enumerate(result.streams) if s.component == name]
        states = [(i, s) for i, s in enumerate(result.states) if s.component == name]
        if not streams and not states:
            continue
        divergent = sum(len(s.divergences) for _, s in [*streams, *states])
        out.append(
            f"<section class='component' id='component-{escape(name)}' "
            f"data-component='{escape(name)}' data-divergences='{divergent}'>"
            f"<h2>Component <code>{escape(name)}</code></h2>"
            + "".join(_stream(result, s, i) for i, s in streams)
            + "".join(_state(s, i) for i, s in states) + "</section>")
    return "".join(out)


def _stream(result: Any, s: StreamComparison, index: int) -> str:
    parts = [
        *_opening("stream", index, s, "Leaf stream"),
        (f"<p>Result: {escape(s.spec.describe())}. {s.keys} keys: {s.same} same, {s.different} "
        f"different, {s.missing_right} missing in the port, {s.missing_left} extra in the port.</p>"),
    ]
    stats = [[escape(f.name), str(f.compared), str(f.different), _num(f.min_delta),
              _num(f.mean_delta), _num(f.max_delta), _num(f.mean_abs_delta), f"{f.max_rel:.2%}"]
             for f in s.fields if f.compared]
    if stats:
        parts.append("<h3>Per field (port − legacy)</h3>" + table(
            "fields", ["field", "compared", "different", "min Δ", "mean Δ", "max Δ",
                       "mean |Δ|", "max rel"], stats))
    parts.append(f"<h3>Divergence over {axis_of(s)}</h3>{divergence_svg(s)}")
    if s.divergences:
        rows = [[escape(d.key), escape(d.kind.value), escape(", ".join(d.fields)), _cell(d.legacy),
                 _cell(d.port), f"{d.legacy_count} / {d.port_count}", str(d.position),
                 escape(d.cause)] for d in s.top(MAX_ROWS)]
        parts.append("<h3>Divergent keys</h3>" + _divergences(
            "divergences", f"divergences-{index}", ["key", "kind", "fields", "legacy", "port",
            "emits (legacy / port)", "first divergence at", "cause"], rows, len(s.divergences)))
    parts.append(_key_charts(result, s))
    parts.append("</section>")
    return "".join(parts)


def _key_charts(result: Any, s: StreamComparison) -> str:
    """The drill-down per divergent key (needs both runs' emits: not for a live shadow)."""
    if result.legacy is None or not s.divergences:
        return ""
    top = s.top(KEY_CHARTS)
    keys = {d.key for d in top}
    rows_l = result.legacy.output(s.spec.component, s.spec.stream)
    rows_p = result.port.output(s.spec.component, s.spec.stream)
    legacy = key_series(s.spec, rows_l, keys)
    port = key_series(s.spec, rows_p, keys, len(rows_l) / len(rows_p) if rows_p else 1.0)
    charts = []
    for d in top:
        a, b = legacy.get(d.key), port.get(d.key)
        if a is None and b is None:
            continue
        timed = all(t for _, t in (x for x in (a, b) if x is not None))
        charts.append(key_svg(s.label, d, a[0] if a else None, b[0] if b else None,
                              "event time" if timed else "legacy output position"))
    if not charts:
        return ""
    return (f"<h4>Per key over time: the {len(charts)} largest divergent keys</h4>"
            f"<div class='keys'>{''.join(charts)}</div>")


def _state(s: StateComparison, index: int) -> str:
    parts = [
        *_opening("state", index, s, "Final state"),
        (f"<p>Legacy: {escape(s.legacy_source)} with {s.legacy_keys} keys; port: "
         f"{escape(s.port_source)} with {s.port_keys} keys. {s.same} same, {s.different} "
         f"different, {s.missing_right} missing in the port, {s.missing_left} extra in the "
         "port.</p>"),
    ]
    if s.divergences:
        rows = [[escape(d.key), escape(d.kind.value), _cell(d.legacy), _cell(d.port),
                 escape(d.cause)] for d in s.top(MAX_ROWS)]
        parts.append(_divergences("state-divergences", f"state-divergences-{index}",
                                  ["key", "kind", "legacy", "port", "cause"], rows,
                                  len(s.divergences)))
    parts.append("</section>")
    return "".join(parts)


def _opening(kind: str, index: int, s: StreamComparison | StateComparison, title: str) -> list[str]:
    """A leaf stream's or a state entry's section tag and heading with its verdict."""
    status = "<span class='ok'>equal</span>" if s.equal else "<span class='bad'>diverges</span>"
    return [(f"<section class='{kind}' id='{kind}-{index}' data-{kind}='{escape(s.label)}' "
             f"data-divergences='{len(s.divergences)}'>"),
            f"<h3>{title} {escape(s.label)}: {status}</h3>"]


def _divergences(cls: str, table_id: str, headers: list[str], rows: list[list[str]],
                 total: int) -> str:
    """The filterable table of the largest divergent keys, and how many of ``total`` it shows."""
    more = (f"<p class='muted'>{len(rows)} largest of {total} shown.</p>"
            if len(rows) < total else "")
    return (f"<input class='filter' data-table='{table_id}' placeholder='filter keys, kinds, "
            "causes'>" + table(cls, headers, rows, table_id) + more)


def _cell(value: Any) -> str:
    return "<span class='muted'>absent</span>" if value is None else escape(
        json.dumps(value, default=str))


def _num(value: float) -> str:
    return f"{int(value):,}" if float(value).is_integer() else f"{value:,.4g}"
