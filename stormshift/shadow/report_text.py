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
from stormshift.shadow.classify import SHORT_CAUSES
from stormshift.shadow.compare import StreamComparison
from stormshift.shadow.final_state import StateComparison

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
    if result.tolerance.abs or result.tolerance.rel:
        console.print(cell(f"tolerance: abs {result.tolerance.abs:g}, "
                           f"rel {result.tolerance.rel:g}"))
    console.print(_counts_table(result.streams))
    for stream in result.streams:
        if not stream.equal:
            _print_stream(stream, console, top)
    if result.states:
        console.print(_state_table(result.states))
        for state in result.states:
            if not state.equal:
                console.print(_keys_table(state, top))
    causes = result.causes()
    if causes:
        table = Table(title="divergences by cause")
        table.add_column("cause")
        table.add_column("short")
        table.add_column("keys", justify="right")
        for cause, n in causes.items():
            table.add_row(cell(cause), SHORT_CAUSES.get(cause, ""), str(n))
        console.print(table)
    for warning in result.warnings:
        console.print(cell(f"warning: {warning}", style="yellow"))
    verdict, _, rest = verdict_text(result).partition(":")
    style = "bold green" if result.equal else "bold red"
    console.print(styled((verdict, style), f":{rest}"))


def verdict_text(result: Any) -> str:
    """``AGREE: ...`` or ``DIVERGE: ...`` (the last line of both reports)."""
    states = result.states
    if result.equal:
        tail = " and the final state are" if states else " is"
        return f"AGREE: every leaf stream{tail} equal within tolerance"
    text = (f"DIVERGE: {sum(len(s.divergences) for s in result.streams)} keys differ in "
            f"{sum(1 for s in result.streams if not s.equal)} of {len(result.streams)} leaf "
            "streams")
    if states:
        text += (f"; {sum(len(s.divergences) for s in states)} keys of the final state in "
                 f"{sum(1 for s in states if not s.equal)} of {len(states)} entries")
    return text


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


def _counts_table(streams: list[StreamComparison]) -> Table:
    table = Table(title="leaf streams: legacy (left) vs port (right)")
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
