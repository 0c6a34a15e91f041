"""``WindowingState``: everything a windowed bolt task remembers.

One picklable attribute (``WindowedBolt.windowing_state``), so the engines'
component snapshots carry it as they carry any bolt attribute. Its
``snapshot()`` is the explicit shape (format 1), plain dicts and lists::

    {"format": 1,
     "processing_ms": int,            # the task's processing time (ticks)
     "next_watermark_ms": int | None, # processing time of the next watermark step
     "watermark": WatermarkTracker.snapshot(),
     "windows": Windower.snapshot() | CountWindower.snapshot(),
     "buffer": ReleaseBuffer.snapshot() | None,
     "counters": {"on_time", "late_updated", "dropped_late", "late_stream": int},
     "emitted": {(key order, start_ms, end_ms): [(stream, values)]},  # to retract
     "previous": {key order: [WindowedTuple]}}                        # get_expired
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from stormshift.windows.config import Windowing
from stormshift.windows.count import CountWindower, ReleaseBuffer
from stormshift.windows.watermark import WatermarkTracker
from stormshift.windows.windower import Windower

__all__ = ["COUNTERS", "FORMAT", "WindowingState"]

FORMAT = 1
COUNTERS = ("on_time", "late_updated", "dropped_late", "late_stream")


@dataclass
class WindowingState:
    tracker: WatermarkTracker
    windower: Windower | None
    counter: CountWindower | None
    buffer: ReleaseBuffer | None
    processing_ms: int = 0
    next_watermark_ms: int | None = None
    counters: dict[str, int] = field(default_factory=lambda: dict.fromkeys(COUNTERS, 0))
    emitted: dict[tuple[str, int, int], list[tuple[str, list[Any]]]] = field(
        default_factory=dict)
    previous: dict[str, list[Any]] = field(default_factory=dict)

    @classmethod
    def build(cls, windowing: Windowing, expected: list[Any]) -> WindowingState:
        tracker = WatermarkTracker(windowing.lag_ms, expected=expected,
                                   idle_timeout_ms=windowing.idle_timeout_ms)
        if windowing.assigner is not None:
            return cls(tracker, windowing.build_time(), None, None,
                       next_watermark_ms=windowing.watermark_interval_ms)
        buffer = ReleaseBuffer() if windowing.event_time else None
        return cls(tracker, None, windowing.build_count(), buffer)

    def snapshot(self) -> dict[str, Any]:
        windows = self.windower if self.windower is not None else self.counter
        assert windows is not None
        return {
            "format": FORMAT,
            "processing_ms": self.processing_ms,
            "next_watermark_ms": self.next_watermark_ms,
            "watermark": self.tracker.snapshot(),
            "windows": windows.snapshot(),
            "buffer": None if self.buffer is None else self.buffer.snapshot(),
            "counters": dict(self.counters),
            "emitted": {k: list(v) for k, v in self.emitted.items()},
            "previous": {k: list(v) for k, v in self.previous.items()},
        }

    def event_time_snapshot(self) -> dict[str, Any]:
        """``snapshot()`` without its processing-time fields (the task's clock, the next
        watermark step, when each partition was last seen): they follow when batches ran,
        so two runs of the same input -- one with a crash and replay, one without --
        agree on everything else, and must."""
        snap = self.snapshot()
        del snap["processing_ms"], snap["next_watermark_ms"]
        snap["watermark"] = {k: v for k, v in snap["watermark"].items() if k != "last_seen_ms"}
        return snap

    def restore(self, snap: dict[str, Any]) -> None:
        if snap.get("format") != FORMAT:
            raise ValueError(f"windowing snapshot format {snap.get('format')!r}, this "
                             f"stormshift reads format {FORMAT}")
        self.processing_ms = int(snap["processing_ms"])
        self.next_watermark_ms = snap["next_watermark_ms"]
        self.tracker.restore(snap["watermark"])
        windows = self.windower if self.windower is not None else self.counter
        assert windows is not None
        windows.restore(snap["windows"])
        if self.buffer is not None and snap["buffer"] is not None:
            self.buffer.restore(snap["buffer"])
        self.counters = dict(snap["counters"])
        self.emitted = {k: list(v) for k, v in snap["emitted"].items()}
        self.previous = {k: list(v) for k, v in snap["previous"].items()}
