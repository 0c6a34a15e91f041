"""The terminal summary of a shadow run (rich, fits 80 columns).

BigDiffy-style: per leaf stream the global counts (same / different /
missing-left = only in the port / missing-right = only in the legacy), then
for streams that diverge the per-field delta statistics (``port - legacy``)
and the top divergent keys with their kind and cause.
"""

from __future__ import annotations

import json
from typing import Any

from rich.console import Console
from rich.table import Table

from stormshift.shadow.classify import SHORT_CAUSES
from stormshift.shadow.compare import StreamComparison

__all__ = ["print_report", "short"]

_TOP = 10


def short(value: Any, width: int = 18) -> str:
    """A value in at most ``width`` characters."""
    text = value if isinstance(value, str) else json.dumps(value, default=str)
    return text if len(text) <= width else text[: width - 1] + "…"


def print_report(result: Any, console: Console, top: int = _TOP) -> None:
    """Print ``result`` (a ``ShadowResult``, or a live shadow's ``LiveResult``)."""
    console.print(f"shadow of [bold]{result.topology}[/]: {result.sides}", highlight=False)
    console.print(result.context, highlight=False, markup=False)
    if result.tolerance.abs or result.tolerance.rel:
        console.print(f"tolerance: abs {result.tolerance.abs:g}, rel {result.tolerance.rel:g}",
                      highlight=False)
    console.print(_counts_table(result.streams))
    for stream in result.streams:
        if not stream.equal:
            _print_stream(stream, console, top)
    causes = result.causes()
    if causes:
        table = Table(title="divergences by cause")
        table.add_column("cause")
        table.add_column("short")
        table.add_column("keys", justify="right")
        for cause, n in causes.items():
            table.add_row(cause, SHORT_CAUSES.get(cause, ""), str(n))
        console.print(table)
    for warning in result.warnings:
        console.print(f"warning: {warning}", style="yellow", highlight=False, markup=False)
    if result.equal:
        console.print("[bold green]AGREE[/]: every leaf stream is equal within tolerance")
    else:
        keys = sum(len(s.divergences) for s in result.streams)
        streams = sum(1 for s in result.streams if not s.equal)
        console.print(f"[bold red]DIVERGE[/]: {keys} keys differ in {streams} of "
                      f"{len(result.streams)} leaf streams")


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
        table.add_row(s.label, s.spec.mode.value, str(s.keys), str(s.same), str(s.different),
                      str(s.missing_left), str(s.missing_right), style=style)
    return table


def _print_stream(stream: StreamComparison, console: Console, top: int) -> None:
    console.print(f"[bold]{stream.label}[/]: {stream.spec.describe()}", highlight=False)
    stats = Table(title="per field, port - legacy")
    for column in ("field", "diff", "min Δ", "mean Δ", "max Δ", "max rel"):
        stats.add_column(column, justify="left" if column == "field" else "right")
    for f in stream.fields:
        if f.compared:
            stats.add_row(short(f.name, 14), f"{f.different}/{f.compared}", _num(f.min_delta),
                          _num(f.mean_delta), _num(f.max_delta), f"{f.max_rel:.1%}")
    if stats.row_count:
        console.print(stats)
    table = Table(title=f"top {min(top, len(stream.divergences))} of "
                        f"{len(stream.divergences)} divergent keys")
    table.add_column("key", no_wrap=True)
    table.add_column("kind", no_wrap=True)
    table.add_column("legacy", no_wrap=True)
    table.add_column("port", no_wrap=True)
    table.add_column("cause", no_wrap=True)
    for d in stream.top(top):
        table.add_row(short(d.key, 14), d.kind.value.split()[0], short(d.legacy, 16),
                      short(d.port, 16), SHORT_CAUSES.get(d.cause, d.cause))
    console.print(table)


def _num(value: float) -> str:
    if float(value).is_integer():
        return f"{int(value):,}"
    return f"{value:,.3g}"
