"""Operators' metrics of a run: what the Storm UI showed, per component and task.

Runs in the driver process only (the Spark driver, or the local engine's
process), plus ``stormshift top`` in any shell: tasks already report their
per-batch counters to the driver (``engines/spark/task/counters.py``); this
package folds them into a ``Board`` once per batch, never per tuple.

- ``latency.py``: the fixed-bucket execute-latency histogram and its quantiles;
- ``board.py``: the figures of one run (per task, per component, per batch);
- ``exposition.py``: the Prometheus text endpoint (``--metrics-port``);
- ``records.py``: the board in Redis, for ``stormshift top`` from another shell.
"""

from stormshift.metrics.board import Board, TaskFigures
from stormshift.metrics.latency import LatencyHistogram

__all__ = ["Board", "LatencyHistogram", "TaskFigures"]
