"""What a spout's planner process tells the driver: its errors, warnings and log lines.

A generic spout's ``next_tuple`` runs in the stream reader's planner, a Python
process of its own: what it raises (Storm keeps calling ``next_tuple``, and so
do we) and what it logs would be lost there. ``SpoutReport`` (planner side)
writes both to Redis beside the state; ``read_spout_reports`` (driver side)
takes them after each batch into the run summary, the error digest and the log
file. Where they live in Redis: ``engines/spark/records/runrecords.py``.
"""

from __future__ import annotations

import json
from typing import Any

from stormshift.engines.logs import forward_logs, max_lines_per_task
from stormshift.engines.spark.records.runrecords import SpoutReportRecord, clear_spout_reports
from stormshift.state.client import Redis

__all__ = ["SpoutReport", "clear_spout_reports", "read_spout_reports"]


#: a planner reports between two reads of the driver (several batches): it keeps this many
#: times the per-task limit (``-o stormshift.logs.max_lines_per_task``), and counts the rest
SPOUT_LINES_PER_LIMIT = 10


class SpoutReport:
    """Planner side: one spout's errors (counted by kind) and log lines."""

    def __init__(self, r: Redis, namespace: str, spout: str, config: Any = None):
        self.record = SpoutReportRecord(r, namespace, spout)
        self.keep_lines = max_lines_per_task(config or {}, spout) * SPOUT_LINES_PER_LIMIT

    def error(self, failure: Any) -> None:
        cause = failure.cause
        kind = json.dumps([type(cause).__name__, failure.location or "", str(cause)[:300]])
        self.record.add_error(kind, failure.traceback_text[-4000:])

    def warning(self, text: str) -> None:
        self.record.add_warning(text)

    def logs(self, task: int, lines: list[tuple[str, str]]) -> None:
        if not lines:
            return
        self.record.add_lines([json.dumps([task, level, text]) for level, text in lines],
                              self.keep_lines)


def read_spout_reports(r: Redis, namespace: str, summary: Any, spouts: list[str]) -> None:
    """Move what the planners reported into ``summary`` (errors) and the log file (lines).
    Error counts are totals so far: the digest's count for a spout kind is replaced."""
    for spout in spouts:
        record = SpoutReportRecord(r, namespace, spout)
        lines, dropped = record.take_lines()
        for raw in lines:
            task, level, text = json.loads(raw)
            forward_logs(spout, int(task), [(level, text)])
        if dropped and spout in summary.components:
            summary.components[spout].logs_dropped += dropped
        for text in record.warnings():
            summary.warn(text)
        fields = record.errors()
        total = 0
        for kind, count in sorted(fields.items()):
            if kind.startswith("trace:"):
                continue
            type_name, location, message = json.loads(kind)
            raw_trace = fields.get("trace:" + kind, b"")
            trace = raw_trace.decode() if isinstance(raw_trace, bytes) else str(raw_trace)
            seen = summary.problems.add(spout, type_name, message, location, trace, 0)
            seen.count = int(count)
            total += int(count)
        if spout in summary.components and total:
            summary.components[spout].errors = total
