"""The terminal summary of a shadow run (rich, fits 80 columns).

BigDiffy-style: per leaf stream the global counts (same / different /
missing-left = only in the port / missing-right = only in the legacy), then
for streams that diverge the per-field delta statistics (``port - legacy``)
and the top divergent keys with their kind and cause; the same counts and
top keys per entry of the bolts' final state (``final_state.py``).
"""

from __future__ import annotations

import json
from typing import Any

from rich.console import Console
from rich.table import Table

from stormshift.display import cell, cut, styled
from stormshift.shadow.classify import ROUNDING, SHORT_CAUSES
from stormshift.shadow.compare import StreamComparison
from stormshift.shadow.final_state import StateComparison
from stormshift.shadow.verdict import classes, judge

__all__ = ["print_report", "short", "verdict_text"]

_TOP = 10
_SOURCES = {"attribute": "attr", "map": "map", "absent": "-"}


def short(value: Any, width: int = 18) -> str:
    """A value in at most ``width`` characters, control characters shown as escapes (a cut
    never splits one)."""
    text = value if isinstance(value, str) else json.dumps(value, default=str, ensure_ascii=False)
    return cut(text, width)


def print_report(result: Any, console: Console, top: int = _TOP) -> None:
    """Print ``result`` (a ``ShadowResult``, or a live shadow's ``LiveResult``)."""
    console.print(styled("shadow of ", (result.topology, "bold"), f": {result.sides}"))
    console.print(cell(result.context))
    console.print(cell(f"float tolerance: {result.tolerance.describe()} (differences within it "
                       "are counted as rounding)"))
    console.print(_counts_table(result.streams))
    for stream in result.streams:
        if _shown(stream):
            _print_stream(stream, console, top)
    if result.states:
        console.print(_state_table(result.states))
        for state in result.states:
            if _shown(state):
                console.print(_keys_table(state, top))
    logs = getattr(result, "logs", [])  # only when nothing else was compared (logs.py)
    if logs:
        console.print(_counts_table(logs, "component logs per template (nothing else compared)"))
        for log in logs:
            if _shown(log):
                _print_stream(log, console, top)
    counted = classes(result)
    if counted:
        table = Table(title="differences by class")
        table.add_column("class", no_wrap=True)
        table.add_column("keys", justify="right")
        table.add_column("example", overflow="fold", max_width=28)
        table.add_column("why", overflow="fold", max_width=30)
        for c in counted:
            table.add_row(cell(c.id), str(c.keys), cell(c.example), cell(c.detail or c.cause),
                          style="red" if c.id in ("port", "live") else None)
        console.print(table)
    for warning in result.warnings:
        console.print(cell(f"warning: {warning}", style="yellow"))
    lost = getattr(result, "losses", [])  # a live shadow has no legacy run to read
    if lost:
        console.print(cell(f"legacy lost: {'; '.join(lost)}"))
    verdict = judge(result, counted)
    style = "bold green" if verdict.safe else "bold red"
    console.print(styled((verdict.word, style), f": {verdict.reason}"))


def verdict_text(result: Any) -> str:
    """The verdict line, ``SAFE TO SWITCH: ...`` / ``PORT DIFFERS: ...`` / ``NOTHING
    COMPARED: ...`` / ``MOSTLY FAILED: ...`` (the top of the HTML report, the last line of
    the terminal one; ``verdict.py``)."""
    return judge(result).line


def _shown(item: StreamComparison | StateComparison) -> bool:
    """Whether a leaf stream's or a state entry's divergent keys get their own table: any
    difference but rounding (counted in the classes table only)."""
    return any(d.cause != ROUNDING for d in item.divergences)


def _state_table(states: list[StateComparison]) -> Table:
    table = Table(title="final state: legacy (left) vs port (right)")
    table.add_column("component.entry", overflow="fold", max_width=30)
    table.add_column("from")
    for column in ("keys", "same", "diff", "miss-L", "miss-R"):
        table.add_column(column, justify="right")
    for s in states:
        kinds = "/".join(_SOURCES.get(x, x) for x in (s.legacy_source, s.port_source))
        table.add_row(cell(s.label), kinds, str(s.keys), str(s.same), str(s.different),
                      str(s.missing_left), str(s.missing_right),
                      style="green" if s.equal else "red")
    return table


def _counts_table(streams: list[StreamComparison],
                  title: str = "leaf streams: legacy (left) vs port (right)") -> Table:
    table = Table(title=title)
    table.add_column("stream", overflow="fold", max_width=30)
    table.add_column("mode")
    table.add_column("keys", justify="right")
    table.add_column("same", justify="right")
    table.add_column("diff", justify="right")
    table.add_column("miss-L", justify="right")
    table.add_column("miss-R", justify="right")
    for s in streams:
        style = "green" if s.equal else "red"
        table.add_row(cell(s.label), s.spec.mode.value, str(s.keys), str(s.same), str(s.different),
                      str(s.missing_left), str(s.missing_right), style=style)
    return table


def _print_stream(stream: StreamComparison, console: Console, top: int) -> None:
    console.print(styled((stream.label, "bold"), f": {stream.spec.describe()}"))
    stats = Table(title="per field, port - legacy")
    for column in ("field", "diff", "min Δ", "mean Δ", "max Δ", "max rel"):
        stats.add_column(column, justify="left" if column == "field" else "right")
    for f in stream.fields:
        if f.compared:
            stats.add_row(cell(short(f.name, 14)), f"{f.different}/{f.compared}", _num(f.min_delta),
                          _num(f.mean_delta), _num(f.max_delta), f"{f.max_rel:.1%}")
    if stats.row_count:
        console.print(stats)
    console.print(_keys_table(stream, top))


def _keys_table(stream: StreamComparison | StateComparison, top: int) -> Table:
    title = "" if isinstance(stream, StreamComparison) else f"{stream.label}: "
    table = Table(title=f"{title}top {min(top, len(stream.divergences))} of "
                        f"{len(stream.divergences)} divergent keys")
    table.add_column("key", no_wrap=True)
    table.add_column("kind", no_wrap=True)
    table.add_column("legacy", no_wrap=True)
    table.add_column("port", no_wrap=True)
    table.add_column("cause", no_wrap=True)
    for d in stream.top(top):
        table.add_row(cell(short(d.key, 14)), d.kind.value.split()[0], cell(short(d.legacy, 16)),
                      cell(short(d.port, 16)), cell(SHORT_CAUSES.get(d.cause, d.cause)))
    return table


def _num(value: float) -> str:
    if float(value).is_integer():
        return f"{int(value):,}"
    return f"{value:,.3g}"
