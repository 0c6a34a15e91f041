"""What a spout's planner process tells the driver: its errors, warnings and log lines.

A generic spout's ``next_tuple`` runs in the stream reader's planner, a Python
process of its own: what it raises (Storm keeps calling ``next_tuple``, and so
do we) and what it logs would be lost there. ``SpoutReport`` (planner side)
writes both to Redis beside the state; ``read_spout_reports`` (driver side)
takes them after each batch into the run summary, the error digest and the log
file. Keys: ``state/keys.py`` ``spout_report_key``.
"""

from __future__ import annotations

import json
from typing import Any

from stormshift.engines.logs import MAX_LINES_PER_TASK, forward_logs
from stormshift.state.keys import spout_report_key

__all__ = ["SpoutReport", "clear_spout_reports", "read_spout_reports"]


class SpoutReport:
    """Planner side: one spout's errors (counted by kind) and log lines."""

    def __init__(self, r: Any, namespace: str, spout: str):
        self.r = r
        self.errors_key = spout_report_key(namespace, spout, "errors")
        self.logs_key = spout_report_key(namespace, spout, "logs")
        self.warnings_key = spout_report_key(namespace, spout, "warnings")

    def error(self, failure: Any) -> None:
        cause = failure.cause
        kind = json.dumps([type(cause).__name__, failure.location or "", str(cause)[:300]])
        pipe = self.r.pipeline(transaction=False)
        pipe.hincrby(self.errors_key, kind, 1)
        pipe.hsetnx(self.errors_key, "trace:" + kind, failure.traceback_text[-4000:])
        pipe.execute()

    def warning(self, text: str) -> None:
        self.r.sadd(self.warnings_key, text)

    def logs(self, task: int, lines: list[tuple[str, str]]) -> None:
        if not lines:
            return
        pipe = self.r.pipeline(transaction=False)
        pipe.rpush(self.logs_key, *(json.dumps([task, level, text]) for level, text in lines))
        pipe.ltrim(self.logs_key, -MAX_LINES_PER_TASK * 10, -1)
        pipe.execute()


def clear_spout_reports(r: Any, namespace: str, spouts: list[str]) -> None:
    r.delete(*(spout_report_key(namespace, s, p) for s in spouts
               for p in ("errors", "logs", "warnings")))


def read_spout_reports(r: Any, namespace: str, summary: Any, spouts: list[str]) -> None:
    """Move what the planners reported into ``summary`` (errors) and the log file (lines).
    Error counts are totals so far: the digest's count for a spout kind is replaced."""
    for spout in spouts:
        logs_key = spout_report_key(namespace, spout, "logs")
        pipe = r.pipeline(transaction=True)
        pipe.lrange(logs_key, 0, -1)
        pipe.delete(logs_key)
        raw_lines, _ = pipe.execute()
        for raw in raw_lines:
            task, level, text = json.loads(raw)
            forward_logs(spout, int(task), [(level, text)])
        for text in sorted(r.smembers(spout_report_key(namespace, spout, "warnings"))):
            summary.warn(text.decode() if isinstance(text, bytes) else text)
        raw = r.hgetall(spout_report_key(namespace, spout, "errors"))
        fields = {(k.decode() if isinstance(k, bytes) else k): v for k, v in raw.items()}
        total = 0
        for kind, count in sorted(fields.items()):
            if kind.startswith("trace:"):
                continue
            type_name, location, message = json.loads(kind)
            trace = fields.get("trace:" + kind, b"")
            trace = trace.decode() if isinstance(trace, bytes) else trace
            seen = summary.problems.add(spout, type_name, message, location, trace, 0)
            seen.count = int(count)
            total += int(count)
        if spout in summary.components and total:
            summary.components[spout].errors = total
