"""Folding what an engine reports into a ``Board`` (driver side, once per batch).

The Spark driver's ``BatchResult`` holds every task's counters record of the
batch (``engines/spark/task/counters.py``): its counters, busy time, sampled
latencies, snapshot bytes and how its state was opened. ``fold_batch`` adds
them up exactly as the run summary does with the same records, so the
endpoint's totals are the summary's.
"""

from __future__ import annotations

from typing import Any

from stormshift.metrics.board import Board
from stormshift.metrics.counts import COUNTERS
from stormshift.state.deadletter import DeadLetter

__all__ = ["fold_batch", "fold_spout_dead_letters"]


def fold_batch(board: Board, result: Any, now_ms: int) -> None:
    """Add one committed batch (a ``driver/batch.py`` ``BatchResult``) to ``board``."""
    for (name, task), stats in sorted(result.tasks.items()):
        board.add(name, task, **{c: getattr(stats, c) for c in COUNTERS})
        fig = board.task(name, task)
        if fig.kind == "spout":  # a spout's record is its emit count only
            continue
        board.busy_in_batch(name, task, stats.busy_us / 1000, result.duration_ms)
        fig.latency.merge(stats.latency)
        fig.state_bytes += stats.state_bytes
        fig.catch_ups += stats.caught_up
        fig.restores += int(not stats.reused and not stats.caught_up and not stats.started)
    for bolt, counters in result.windows.items():
        board.add_windows(bolt, counters)
    board.watermarks_ms.update(result.watermarks)
    for spout, lag in result.source_lags.items():
        board.set_lag(spout, lag)
    board.batch(result.duration_ms, result.txid, now_ms)


def fold_spout_dead_letters(board: Board, letters: list[DeadLetter]) -> None:
    """Spout records and emits dead-lettered outside any batch (txid -1), as the summary
    counts them (``engines/spark/driver/engine.py``)."""
    for d in letters:
        if d.txid != -1:
            continue
        task = d.task if d.task is not None and (d.component, d.task) in board.tasks else 0
        fig = board.tasks.get((d.component, task))
        if fig is not None and fig.kind == "spout":
            board.add(d.component, task, dead_lettered=1)
