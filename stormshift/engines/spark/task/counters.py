"""What tasks report to the driver: per-member counters of a batch, and attempt counts.

Each hosted member of a stage task commits one packed record (``pack``) with its
task transaction (``state/task_txn.py`` step 7); the driver reads them all after
the batch's last stage (``read_stats``) for the progress line and the run
summary. Both sides of the record's layout live here, so they cannot drift
apart; where the records live in Redis is ``engines/spark/records/batchstats.py``'s business.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import msgpack

from stormshift.engines.spark.records.batchstats import read_records
from stormshift.metrics.counts import TupleCounts
from stormshift.metrics.latency import LatencyHistogram
from stormshift.state.client import Redis

__all__ = ["COUNTERS", "MemberStats", "read_stats"]

COUNTERS = ("tuples_in", "tuples_out", "acks", "fails", "errors", "dead_lettered", "leaf", "reused",
            "caught_up", "logs_dropped", "started")
"""The record's counters in the order ``pack`` writes them (its layout: a stored record is
read by name from that order): ``metrics/counts.py``'s ``TupleCounts`` and the member's own."""


@dataclass
class MemberStats(TupleCounts):
    """One hosted bolt task's counters for one batch: its ``TupleCounts`` and these. reused /
    caught_up: the task's live instance was used as it was / brought up to date by the
    deltas since its version; started: built with no stored state (a first run); none of
    them: restored whole (``taskstate.open_task``)."""

    errors: int = 0
    leaf: int = 0
    reused: int = 0
    caught_up: int = 0
    logs_dropped: int = 0  # log lines past the cap (``engines/logs.py``)
    started: int = 0
    maxseq: dict[int, int] = field(default_factory=dict)  # highest spout emit seq per source task
    reasons: dict[str, int] = field(default_factory=dict)  # dead letters per reason
    # distinct errors: (type, message or "", location) -> [count, first traceback, first message]
    problems: dict[tuple[str, str, str], list[Any]] = field(default_factory=dict)
    logs: list[tuple[str, str]] = field(default_factory=list)  # the member's self.logger lines
    windows: dict[str, Any] | None = None  # a windowed bolt's batch report (task/windowing.py)
    busy_us: int = 0  # time the member spent on its input, ticks and windows (capacity)
    state_bytes: int = 0  # snapshot + keyed-map bytes written
    latency: LatencyHistogram = field(default_factory=LatencyHistogram)  # sampled execute times
    sent: list[int] = field(default_factory=list)  # global task ids it sent rows (driver/waves.py)
    task: int = 0  # set by read_stats

    def take_logs(self, lines: list[tuple[str, str]], limit: int | None = None) -> None:
        """Keep a batch's log lines, at most ``limit`` (default ``MAX_LINES_PER_TASK``); the
        rest are counted in ``logs_dropped`` (``engines/logs.py``; ``pack`` says so in a line)."""
        from stormshift.engines.logs import MAX_LINES_PER_TASK

        room = max((MAX_LINES_PER_TASK if limit is None else limit) - len(self.logs), 0)
        self.logs.extend((str(level), str(text)) for level, text in lines[:room])
        self.logs_dropped += max(len(lines) - room, 0)

    def log_lines(self) -> list[list[str]]:
        """The kept lines, then one saying how many were dropped (if any)."""
        from stormshift.engines.logs import LIMIT_KEY

        out = [list(line) for line in self.logs]
        if self.logs_dropped:
            out.append(["WARN", (f"{self.logs_dropped:,} more log lines of this task in this "
                                f"batch were dropped (-o {LIMIT_KEY}=N keeps more)")])
        return out

    def note_error(self, error: BaseException, trace: str = "") -> None:
        """Count one error by kind; the first ``MAX_KINDS`` kinds keep a traceback each."""
        from stormshift.engines.problems import MAX_KINDS

        cause = getattr(error, "cause", None)
        location = getattr(error, "location", "") or ""
        trace = trace or getattr(error, "traceback_text", "") or ""
        if isinstance(cause, BaseException):
            error = cause
        message = str(error).strip().split("\n")[0][:300]
        key = (type(error).__name__, "" if location else message, location)  # as ErrorDigest
        seen = self.problems.get(key)
        if seen is None and len(self.problems) >= MAX_KINDS:
            key, trace, message = ("(other errors)", "", ""), "", ""
            seen = self.problems.get(key)
        if seen is None:
            self.problems[key] = [1, trace[-4000:], message]
        else:
            seen[0] += 1

    def pack(self) -> bytes:
        return msgpack.packb([*(getattr(self, c) for c in COUNTERS), list(self.maxseq.items()),
                              self.reasons, [[*k, *v] for k, v in self.problems.items()],
                              self.log_lines(), self.windows,
                              self.busy_us, self.state_bytes, self.latency.to_list(), self.sent],
                             use_bin_type=True)


def read_stats(r: Redis, namespace: str, txid: int) -> Iterator[tuple[str, MemberStats]]:
    """Every task's record of batch ``txid`` as ``(member name, counters)``, in key order."""
    for field_name, packed in read_records(r, namespace, txid):
        name, task = field_name.rsplit(":", 1)
        values = msgpack.unpackb(packed, raw=False)
        stats = MemberStats(**dict(zip(COUNTERS, values[: len(COUNTERS)])))
        stats.maxseq = dict(values[len(COUNTERS)])
        if len(values) > len(COUNTERS) + 1 and values[len(COUNTERS) + 1]:
            stats.reasons = dict(values[len(COUNTERS) + 1])
        if len(values) > len(COUNTERS) + 2:
            stats.problems = {tuple(p[:3]): list(p[3:]) for p in values[len(COUNTERS) + 2]}
        if len(values) > len(COUNTERS) + 3:
            stats.logs = [(level, text) for level, text in values[len(COUNTERS) + 3]]
        if len(values) > len(COUNTERS) + 4:
            stats.windows = values[len(COUNTERS) + 4]
        if len(values) > len(COUNTERS) + 7:
            stats.busy_us, stats.state_bytes = values[len(COUNTERS) + 5: len(COUNTERS) + 7]
            stats.latency = LatencyHistogram.from_list(values[len(COUNTERS) + 7])
        if len(values) > len(COUNTERS) + 8:
            stats.sent = list(values[len(COUNTERS) + 8])
        stats.task = int(task)
        yield name, stats
