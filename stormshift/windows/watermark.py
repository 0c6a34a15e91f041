"""The watermark of one windowed bolt task, from the tuples it sees.

Words: a *partition* is one upstream source task on one input stream
(``(component, stream, task_id)``); its watermark is the largest event time
it delivered minus ``lag_ms`` (Storm's "lag": the maximum out-of-orderness).
The bolt's watermark is the minimum over its *expected* partitions (every
task of every input, known from the topology) -- so until each of them has
delivered a tuple it stays at ``START_OF_TIME_MS``, as Storm's
``WaterMarkEventGenerator`` waits for every input stream. A partition that
delivered nothing for ``idle_timeout_ms`` of processing time is *idle* and
left out of the minimum until it delivers again; when every partition is
idle the watermark holds. The watermark never goes back.

Meaning: at watermark ``W`` no element with ``event_ms < W`` is expected any
more; a window ``[s, e)`` is complete once ``W >= e``.

Pure: processing time comes in as ``now_ms`` arguments, never from a clock.
All state is plain picklable attributes; ``snapshot()``/``restore()`` give
it as a dict.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable
from typing import Any

from stormshift.errors import WindowConfigError
from stormshift.windows.window import END_OF_TIME_MS, START_OF_TIME_MS

__all__ = ["WatermarkTracker"]

Partition = Hashable


class WatermarkTracker:
    """Per-partition max event time; ``current(now_ms)`` is the bolt's watermark."""

    def __init__(
        self,
        lag_ms: int = 0,
        *,
        expected: Iterable[Partition] = (),
        idle_timeout_ms: int | None = None,
    ) -> None:
        if lag_ms < 0:
            raise WindowConfigError(f"lag_ms must be >= 0, got {lag_ms}")
        self.lag_ms = lag_ms
        self.idle_timeout_ms = idle_timeout_ms
        self.max_event_ms: dict[Partition, int] = {}
        self.last_seen_ms: dict[Partition, int] = {}
        self.expected: list[Partition] = list(dict.fromkeys(expected))
        self.watermark_ms = START_OF_TIME_MS
        self.ended = False

    def observe(self, partition: Partition, event_ms: int, now_ms: int) -> None:
        """Record one tuple of ``partition`` (does not move the watermark by itself)."""
        if partition not in self.max_event_ms:
            self.max_event_ms[partition] = event_ms
            if partition not in self.expected:
                self.expected.append(partition)
        elif event_ms > self.max_event_ms[partition]:
            self.max_event_ms[partition] = event_ms
        self.last_seen_ms[partition] = now_ms

    def candidate(self, now_ms: int) -> int:
        """The watermark the data allows now (not yet applied)."""
        if self.ended:
            return END_OF_TIME_MS
        active = [p for p in self.expected if not self._idle(p, now_ms)]
        if not active:
            return self.watermark_ms  # every partition idle (or none known): hold
        if any(p not in self.max_event_ms for p in active):
            return self.watermark_ms
        return max(self.watermark_ms, min(self.max_event_ms[p] for p in active) - self.lag_ms)

    def advance(self, now_ms: int) -> int:
        """Apply ``candidate(now_ms)``; returns the (never decreasing) watermark."""
        self.watermark_ms = max(self.watermark_ms, self.candidate(now_ms))
        return self.watermark_ms

    def end_of_input(self) -> int:
        """No more input: the watermark jumps to ``END_OF_TIME_MS``."""
        self.ended = True
        self.watermark_ms = END_OF_TIME_MS
        return self.watermark_ms

    def _idle(self, partition: Partition, now_ms: int) -> bool:
        if self.idle_timeout_ms is None:
            return False
        return now_ms - self.last_seen_ms.get(partition, 0) >= self.idle_timeout_ms

    # -- state ----------------------------------------------------------------
    def snapshot(self) -> dict[str, Any]:
        return {
            "max_event_ms": dict(self.max_event_ms),
            "last_seen_ms": dict(self.last_seen_ms),
            "expected": list(self.expected),
            "watermark_ms": self.watermark_ms,
            "ended": self.ended,
        }

    def restore(self, snap: dict[str, Any]) -> None:
        self.max_event_ms = dict(snap["max_event_ms"])
        self.last_seen_ms = dict(snap["last_seen_ms"])
        self.expected = list(snap["expected"])
        self.watermark_ms = int(snap["watermark_ms"])
        self.ended = bool(snap["ended"])
