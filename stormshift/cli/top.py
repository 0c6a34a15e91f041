"""``stormshift top NAME``: a run's metrics, per component and task, live in the terminal.

Reads the board the run's driver writes to Redis after each batch
(``metrics/records.py``), so it works from another shell while the run goes
on, and after it (the record stays a day). The figures are the ones
``stormshift run --metrics-port`` serves (``metrics/board.py`` defines them).
``--once`` prints one frame and exits, ``--json`` prints the board as JSON.
"""

from __future__ import annotations

import time
from typing import Any

import click
from rich.console import Group
from rich.live import Live
from rich.table import Table
from rich.text import Text

from stormshift.cli.options import json_option, redis_option
from stormshift.display import console as safe_console
from stormshift.display import json_text
from stormshift.errors import NotFoundError
from stormshift.metrics.board import Board
from stormshift.state.client import Redis

__all__ = ["render", "top_command"]


@click.command("top")
@click.argument("name")
@redis_option()
@click.option("--once", is_flag=True, help="Print one frame and exit (scripts, tests).")
@click.option("--interval", type=click.FloatRange(0.1), default=1.0, show_default=True,
              metavar="SECS", help="Seconds between two reads of the run's record.")
@json_option
def top_command(name: str, redis_url: str | None, once: bool, interval: float,
                as_json: bool) -> None:
    """A live view of run NAME's metrics (NAME: the run's --namespace, default the topology's
    name), read from Redis: tuples, latency, capacity per task; sources' lag; windows;
    batches."""
    from stormshift.cli.connect import open_state

    r = open_state(redis_url, reading=False)  # a refused password: one line, exit 2
    board = _read(r, name)
    if as_json:
        click.echo(json_text(board.to_dict(), sort_keys=True))
        return
    console = safe_console()
    if once:
        console.print(render(board, _now_ms()))
        return
    with Live(render(board, _now_ms()), console=console, auto_refresh=False) as live:
        while board.stop_reason == "running":
            time.sleep(interval)
            board = _read(r, name)
            live.update(render(board, _now_ms()), refresh=True)


def _read(r: Redis, name: str) -> Board:
    from stormshift.metrics.records import read_board

    board = read_board(r, name)
    if board is None:
        raise NotFoundError(
            f"top: no metrics record for namespace {name!r} in this Redis; fix: name the run's "
            "--namespace (default: the topology's name) and the run's --redis URL; "
            "`stormshift state ls` lists the namespaces (runs on the Spark engine write it)")
    return board


def _now_ms() -> int:
    return int(time.time() * 1000)


def render(board: Board, now_ms: int) -> Group:
    """One frame: the run's line, one row per task, the replayable sources' lag, then the
    windowed bolts."""
    age = max(now_ms - board.updated_ms, 0) / 1000 if board.updated_ms else 0.0
    mean = board.batch_ms_total / board.batches if board.batches else 0.0
    title = (f"{board.topology} on {board.engine}: {board.stop_reason}, {board.batches} batches "
             f"(last {board.batch_ms_last / 1000:.2f}s, mean {mean / 1000:.2f}s), "
             f"updated {age:.1f}s ago")
    tasks = Table(title=Text(title), min_width=min(len(title) + 2, 200))
    for header in ("component", "task"):
        tasks.add_column(header, overflow="fold")
    for header in ("in", "out", "acked", "failed", "dead-lettered", "capacity", "p50 ms",
                   "p99 ms", "busy s", "state kB", "restores"):
        tasks.add_column(header, justify="right", overflow="fold")
    for f in board.sorted_tasks():
        tasks.add_row(Text(f.component), str(f.task), f"{f.tuples_in:,}", f"{f.tuples_out:,}",
                      f"{f.acks:,}", f"{f.fails:,}", f"{f.dead_lettered:,}", f"{f.capacity:.3f}",
                      f"{f.latency.quantile_ms(0.5):.3f}", f"{f.latency.quantile_ms(0.99):.3f}",
                      f"{f.busy_ms / 1000:.2f}", f"{f.state_bytes / 1000:,.1f}",
                      str(f.restores))
    parts: list[Any] = [tasks]
    sources = [f for f in board.sorted_tasks() if f.source_lag >= 0]
    if sources:
        lags = Table(title="sources: records behind the head (>= N: a lower bound)")
        for header in ("component", "task"):
            lags.add_column(header, overflow="fold")
        lags.add_column("lag", justify="right", overflow="fold")
        for f in sources:
            lags.add_row(Text(f.component), str(f.task),
                         f"{'>= ' if f.source_lag_lower_bound else ''}{f.source_lag:,}")
        parts.append(lags)
    if board.windows or board.watermarks_ms:
        from stormshift.windows.state import WINDOW_COUNTERS

        windows = Table(title="windowed bolts")
        windows.add_column("component", overflow="fold")
        for column in WINDOW_COUNTERS:
            windows.add_column(column.replace("_", " "), justify="right", overflow="fold")
        windows.add_column("watermark (ms)", justify="right", overflow="fold")
        for bolt in sorted(set(board.windows) | set(board.watermarks_ms)):
            counters = board.windows.get(bolt, {})
            mark = board.watermarks_ms.get(bolt)
            windows.add_row(Text(bolt), *(f"{counters.get(c, 0):,}" for c in WINDOW_COUNTERS),
                            "" if mark is None else str(mark))
        parts.append(windows)
    return Group(*parts)
