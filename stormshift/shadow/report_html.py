"""The HTML report of a shadow run: one self-contained file.

Inline CSS, a few lines of inline JS (filtering the divergence tables) and
inline SVG charts (``chart.py``); no external asset, so it can be attached to a
CI job or mailed. Sections: verdict and global counts per leaf stream,
divergences by cause, per component counters of both sides, then per stream
its result rule, per-field delta statistics, the chart of divergence over
event time (or output position) and the per-key divergences.

Elements carry ``id``/``class``/``data-*`` hooks (``#verdict``,
``table.counts``, ``section.stream[data-stream]``, ``table.divergences``,
``svg.divergence-chart``) so a browser test can find the figures.
"""

from __future__ import annotations

import json
from html import escape
from pathlib import Path
from typing import Any

from stormshift.shadow.chart import CAUSE_COLORS, axis_of, divergence_svg
from stormshift.shadow.compare import StreamComparison

__all__ = ["render_html", "write_html"]

MAX_ROWS = 1000

_CSS = """
body{font-family:system-ui,sans-serif;margin:24px;color:#222;max-width:1100px}
h1{font-size:22px}h2{font-size:18px;margin-top:28px}h3{font-size:15px}
table{border-collapse:collapse;margin:8px 0 16px}th,td{border:1px solid #ddd;padding:3px 8px;
font-size:13px;text-align:right}th{background:#f3f3f3}td.l,th.l{text-align:left}
.ok{color:#2ca02c}.bad{color:#d62728}.verdict{font-size:18px;font-weight:bold}
code{background:#f3f3f3;padding:0 3px}.muted{color:#777}.swatch{display:inline-block;width:10px;
height:10px;margin-right:4px}input.filter{margin:4px 0;padding:3px;width:260px}
"""

_JS = """
document.querySelectorAll('input.filter').forEach(function(box){
  box.addEventListener('input', function(){
    var table = document.getElementById(box.dataset.table), text = box.value.toLowerCase();
    table.querySelectorAll('tbody tr').forEach(function(row){
      row.style.display = row.textContent.toLowerCase().indexOf(text) >= 0 ? '' : 'none';
    });
  });
});
"""


def write_html(result: Any, path: str | Path) -> Path:
    """Write the report of ``result`` (a ``ShadowResult`` or ``LiveResult``) to ``path``."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(render_html(result), encoding="utf-8")
    return target


def render_html(result: Any) -> str:
    verdict = ("<span class='ok'>AGREE: every leaf stream is equal within tolerance</span>"
               if result.equal else
               f"<span class='bad'>DIVERGE: {sum(len(s.divergences) for s in result.streams)} "
               f"keys differ in {sum(1 for s in result.streams if not s.equal)} of "
               f"{len(result.streams)} leaf streams</span>")
    body = [
        f"<h1>Shadow run of <code>{escape(result.topology)}</code></h1>",
        f"<p id='verdict' class='verdict' data-equal='{str(result.equal).lower()}'>{verdict}</p>",
        (f"<p>{escape(result.sides)}. {escape(result.context)}. Tolerance: abs "
        f"{result.tolerance.abs:g}, rel {result.tolerance.rel:g}.</p>"),
        _counts(result.streams),
        _causes(result.causes()),
        _warnings(result.warnings, result.injected),
        _components(result),
        *(_stream(s, i) for i, s in enumerate(result.streams)),
    ]
    return ("<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>"
            f"<title>stormshift shadow: {escape(result.topology)}</title><style>{_CSS}</style>"
            f"</head><body>{''.join(body)}<script>{_JS}</script></body></html>")


def _table(cls: str, headers: list[str], rows: list[list[str]], table_id: str = "") -> str:
    ident = f" id='{table_id}'" if table_id else ""
    head = "".join(f"<th class='{'l' if i == 0 else ''}'>{escape(h)}</th>"
                   for i, h in enumerate(headers))
    body = "".join("<tr>" + "".join(f"<td class='{'l' if i == 0 else ''}'>{c}</td>"
                                    for i, c in enumerate(row)) + "</tr>" for row in rows)
    return f"<table class='{cls}'{ident}><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _counts(streams: list[StreamComparison]) -> str:
    rows = [[f"<a href='#stream-{i}'>{escape(s.label)}</a>", s.spec.mode.value, str(s.keys),
             str(s.same), str(s.different), str(s.missing_left), str(s.missing_right),
             str(s.legacy_emits), str(s.port_emits)] for i, s in enumerate(streams)]
    return "<h2>Leaf streams</h2>" + _table(
        "counts", ["stream", "mode", "keys", "same", "different", "missing-left (port only)",
                   "missing-right (legacy only)", "legacy emits", "port emits"], rows)


def _causes(causes: dict[str, int]) -> str:
    if not causes:
        return ""
    rows = [[(f"<span class='swatch' style='background:{CAUSE_COLORS.get(c, '#555')}'></span>"
             f"{escape(c)}"), str(n)] for c, n in causes.items()]
    return "<h2>Divergences by cause</h2>" + _table("causes", ["cause", "keys"], rows)


def _warnings(warnings: list[str], injected: list[str]) -> str:
    out = ""
    if injected:
        out += ("<h3>Faults that fired on the legacy side</h3><ul class='injected'>"
                + "".join(f"<li>{escape(i)}</li>" for i in injected) + "</ul>")
    if warnings:
        out += ("<h3>Warnings</h3><ul class='warnings'>"
                + "".join(f"<li>{escape(w)}</li>" for w in warnings) + "</ul>")
    return out


def _components(result: Any) -> str:
    columns = ("tuples_in", "tuples_out", "acks", "fails", "replays", "duplicates", "restarts",
               "dead_lettered")
    if result.legacy is None:  # a live shadow: no runs, no counters
        return ""
    rows = []
    for name, legacy in result.legacy.components.items():
        port = result.port.components.get(name)
        cells = [f"{getattr(legacy, c)} / {getattr(port, c) if port is not None else '-'}"
                 for c in columns]
        rows.append([escape(name), escape(legacy.kind), *cells])
    return ("<h2>Components (legacy / port)</h2>"
            + _table("components", ["component", "kind", *columns], rows))


def _stream(s: StreamComparison, index: int) -> str:
    status = "<span class='ok'>equal</span>" if s.equal else "<span class='bad'>diverges</span>"
    parts = [
        (f"<section class='stream' id='stream-{index}' data-stream='{escape(s.label)}' "
        f"data-divergences='{len(s.divergences)}'>"),
        f"<h2>{escape(s.label)}: {status}</h2>",
        (f"<p>Result: {escape(s.spec.describe())}. {s.keys} keys: {s.same} same, {s.different} "
        f"different, {s.missing_right} missing in the port, {s.missing_left} extra in the port.</p>"),
    ]
    stats = [[escape(f.name), str(f.compared), str(f.different), _num(f.min_delta),
              _num(f.mean_delta), _num(f.max_delta), _num(f.mean_abs_delta), f"{f.max_rel:.2%}"]
             for f in s.fields if f.compared]
    if stats:
        parts.append("<h3>Per field (port − legacy)</h3>" + _table(
            "fields", ["field", "compared", "different", "min Δ", "mean Δ", "max Δ",
                       "mean |Δ|", "max rel"], stats))
    parts.append(f"<h3>Divergence over {axis_of(s)}</h3>{divergence_svg(s)}")
    if s.divergences:
        table_id = f"divergences-{index}"
        shown = s.top(MAX_ROWS)
        rows = [[escape(d.key), escape(d.kind.value), escape(", ".join(d.fields)), _cell(d.legacy),
                 _cell(d.port), f"{d.legacy_count} / {d.port_count}", str(d.position),
                 escape(d.cause)] for d in shown]
        more = (f"<p class='muted'>{len(shown)} largest of {len(s.divergences)} shown.</p>"
                if len(shown) < len(s.divergences) else "")
        parts.append(
            f"<h3>Divergent keys</h3><input class='filter' data-table='{table_id}' "
            "placeholder='filter keys, kinds, causes'>"
            + _table("divergences", ["key", "kind", "fields", "legacy", "port",
                                     "emits (legacy / port)", "first divergence at", "cause"],
                     rows, table_id) + more)
    parts.append("</section>")
    return "".join(parts)


def _cell(value: Any) -> str:
    return "<span class='muted'>absent</span>" if value is None else escape(
        json.dumps(value, default=str))


def _num(value: float) -> str:
    return f"{int(value):,}" if float(value).is_integer() else f"{value:,.4g}"
