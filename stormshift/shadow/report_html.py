"""The HTML report of a shadow run: one self-contained file.

Inline CSS, a few lines of inline JS (filtering the divergence tables) and
inline SVG charts (``chart.py``, ``key_chart.py``); no external asset, so it can
be attached to a CI job or mailed. Sections: the verdict line
(``verdict.py``), the float tolerance, differences by class with an example
key each, global counts per leaf stream and per final-state entry, per component
counters of both sides, then the drill-down per component
(``report_sections.py``): per leaf stream its result rule, per-field delta
statistics, the chart of divergence over event time (or output position), the
per-key divergences and the largest divergent keys' own charts; per
final-state entry its divergent keys.

Elements carry ``id``/``class``/``data-*`` hooks (``#verdict``,
``table.classes`` (one row per class of difference), ``#tolerance``,
``table.counts``, ``table.state-counts``, ``section.component[data-component]``,
``section.stream[data-stream]``, ``section.state[data-state]``,
``table.divergences``, ``table.state-divergences``, ``svg.divergence-chart``,
``svg.key-chart[data-key]``) so a browser test can find the figures.
"""

from __future__ import annotations

from html import escape
from pathlib import Path
from typing import Any

from stormshift.display import visible
from stormshift.shadow.chart import CAUSE_COLORS
from stormshift.shadow.compare import StreamComparison
from stormshift.shadow.final_state import StateComparison
from stormshift.shadow.report_sections import component_sections
from stormshift.shadow.report_sections import table as _table
from stormshift.shadow.verdict import ClassCount, classes, judge

__all__ = ["render_html", "write_html"]

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
    counted = classes(result)
    verdict = judge(result, counted)
    line = f"<span class='{'ok' if verdict.safe else 'bad'}'>{escape(verdict.line)}</span>"
    body = [
        f"<h1>Shadow run of <code>{escape(result.topology)}</code></h1>",
        (f"<p id='verdict' class='verdict' data-equal='{str(result.equal).lower()}' "
         f"data-verdict='{escape(verdict.word)}' data-exit-code='{verdict.exit_code}'>{line}</p>"),
        (f"<p>{escape(result.sides)}. {escape(result.context)}. <span id='tolerance'>Float "
         f"tolerance: {escape(result.tolerance.describe())} (differences within it are counted "
         "as rounding)</span>.</p>"),
        _classes(counted),
        _losses(getattr(result, "losses", [])),
        _counts(result.streams),
        _state_counts(result.states),
        _log_counts(getattr(result, "logs", [])),
        _warnings(result.warnings, result.injected),
        _components(result),
        component_sections(result),
    ]
    # keys, values and warnings come from the topology's data: a control character in one
    # (ESC clears the screen of whoever `cat`s the file) is shown as its escape, like on the
    # terminal (display.visible; our own markup has none)
    return visible("<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>"
                   f"<title>stormshift shadow: {escape(result.topology)}</title>"
                   f"<style>{_CSS}</style></head><body>{''.join(body)}"
                   f"<script>{_JS}</script></body></html>")


def _counts(streams: list[StreamComparison]) -> str:
    rows = [[f"<a href='#stream-{i}'>{escape(s.label)}</a>", s.spec.mode.value, str(s.keys),
             str(s.same), str(s.different), str(s.missing_left), str(s.missing_right),
             str(s.legacy_emits), str(s.port_emits)] for i, s in enumerate(streams)]
    return "<h2>Leaf streams</h2>" + _table(
        "counts", ["stream", "mode", "keys", "same", "different", "missing-left (port only)",
                   "missing-right (legacy only)", "legacy emits", "port emits"], rows)


def _log_counts(logs: list[StreamComparison]) -> str:
    """Component log lines per message template: only when nothing else was compared."""
    if not logs:
        return ""
    rows = [[escape(s.component), str(s.keys), str(s.same), str(s.different),
             str(s.missing_left), str(s.missing_right), str(s.legacy_emits), str(s.port_emits)]
            for s in logs]
    keys = [[escape(d.key), escape(d.cause), str(d.legacy_count), str(d.port_count)]
            for s in logs for d in s.top(50)]
    return ("<h2 id='logs'>Component logs (nothing else compared)</h2><p>Log lines per "
            "message template (numbers and quoted values as placeholders) and per first "
            "quoted value.</p>" + _table(
                "log-counts", ["component", "templates", "same", "different",
                               "missing-left (port only)", "missing-right (legacy only)",
                               "legacy lines", "port lines"], rows)
            + (_table("log-keys", ["template, value", "cause", "legacy lines", "port lines"],
                      keys) if keys else ""))


def _state_counts(states: list[StateComparison]) -> str:
    if not states:
        return ""
    rows = [[f"<a href='#state-{i}'>{escape(s.label)}</a>",
             escape(f"{s.legacy_source} / {s.port_source}"), str(s.keys), str(s.same),
             str(s.different), str(s.missing_left), str(s.missing_right)]
            for i, s in enumerate(states)]
    return "<h2>Final state</h2>" + _table(
        "state-counts", ["component.entry", "legacy / port", "keys", "same", "different",
                         "missing-left (port only)", "missing-right (legacy only)"], rows)


def _classes(counted: list[ClassCount]) -> str:
    if not counted:
        return ""
    rows = [[(f"<span class='swatch' style='background:{CAUSE_COLORS.get(c.cause, '#555')}'>"
              f"</span>{escape(c.id)}"), escape(c.cause), str(c.keys), escape(c.example),
             escape(c.detail)] for c in counted]
    return "<h2>Differences by class</h2>" + _table(
        "classes", ["class", "cause", "keys", "example key", "why (check's rule and place)"],
        rows)


def _losses(lost: list[str]) -> str:
    """What the legacy side lost on its own (``evidence.losses``): counted, never blamed."""
    if not lost:
        return ""
    return ("<h3>Legacy lost (counted, not the port's)</h3><ul id='losses' class='losses'>"
            + "".join(f"<li>{escape(x)}</li>" for x in lost) + "</ul>")


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


