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

In a task's snapshot chain it is a keyed state object (``state/keyed.py``): one
entry per key and a shared part (``keyed.py``), so a batch writes the keys it
touched and a rescale sends each key to its new task. The bolt reaches the
per-key parts it keeps itself (``emitted``, ``previous``) through the methods
below, which note the key as touched.
"""

from __future__ import annotations

import json
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from stormshift.errors import StateFormatError
from stormshift.windows import keyed as KE
from stormshift.windows.config import Windowing
from stormshift.windows.count import CountWindower, ReleaseBuffer
from stormshift.windows.watermark import WatermarkTracker
from stormshift.windows.window import Window
from stormshift.windows.windower import Windower

__all__ = ["FORMAT", "WINDOW_COUNTERS", "WindowingState"]

FORMAT = 1
WINDOW_COUNTERS = ("on_time", "late_updated", "dropped_late", "late_stream")


@dataclass
class WindowingState:
    tracker: WatermarkTracker
    windower: Windower | None
    counter: CountWindower | None
    buffer: ReleaseBuffer | None
    processing_ms: int = 0
    next_watermark_ms: int | None = None
    counters: dict[str, int] = field(default_factory=lambda: dict.fromkeys(WINDOW_COUNTERS, 0))
    # key order -> (start_ms, end_ms) -> what the pane emitted: [(stream, values)]
    emitted: dict[str, dict[tuple[int, int], list[tuple[str, list[Any]]]]] = field(
        default_factory=dict)
    previous: dict[str, tuple[Any, list[Any]]] = field(default_factory=dict)  # (key, tuples)
    marked: set[str] = field(default_factory=set)  # derived: keys touched here (emitted, ...)
    held_since: int = 0  # derived: the buffer's seq when the state was last written

    # -- what the bolt keeps per key --------------------------------------------
    def take_emitted(self, kord: str, window: Window) -> list[tuple[str, list[Any]]]:
        """What the pane of ``window`` emitted (to retract), forgotten."""
        mine = self.emitted.get(kord)
        if not mine:
            return []
        self.marked.add(kord)
        out = mine.pop((window.start_ms, window.end_ms), [])
        if not mine:
            del self.emitted[kord]
        return out

    def keep_emitted(self, kord: str, window: Window, emitted: list[tuple[str, list[Any]]]
                     ) -> None:
        self.marked.add(kord)
        self.emitted.setdefault(kord, {})[(window.start_ms, window.end_ms)] = emitted

    def previous_of(self, kord: str) -> list[Any]:
        found = self.previous.get(kord)
        return [] if found is None else found[1]

    def set_previous(self, kord: str, key: Any, tuples: list[Any]) -> None:
        self.marked.add(kord)
        self.previous[kord] = (key, tuples)

    def forget_unretractable(self) -> None:
        """What the panes of windows that expired unfired emitted: no pane will retract it
        (``Windower.unretractable``), so it is forgotten -- per expired window, not by a
        look at every window of the key."""
        w = self.windower
        if w is None or not w.unretractable:
            return
        for kord, windows in w.unretractable:
            for window in windows:
                self.take_emitted(kord, window)
        w.unretractable = []

    def idle(self) -> bool:
        """Nothing here can fire, expire or be released without new input: no open window,
        no timer, no tuple held for the watermark (count windows fire on arrivals only)."""
        if self.windower is not None and (self.windower.windows or self.windower.timers_of):
            return False
        return self.buffer is None or not self.buffer.of

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
            "emitted": {(k, s, e): list(v) for k, spans in sorted(self.emitted.items())
                        for (s, e), v in sorted(spans.items())},
            "previous": {k: list(v[1]) for k, v in sorted(self.previous.items())},
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
            raise StateFormatError(f"windowing snapshot format {snap.get('format')!r}, this "
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
        self.emitted = {}
        for (k, s, e), v in snap["emitted"].items():
            self.emitted.setdefault(k, {})[(s, e)] = list(v)
        keys = self.windower.keys if self.windower is not None else {}
        self.previous = {k: (keys.get(k, json.loads(k)), list(v))
                         for k, v in snap["previous"].items()}
        self.marked = set()
        self.held_since = self.buffer.seq if self.buffer is not None else 0

    def __setstate__(self, state: dict[str, Any]) -> None:
        """Unpickle, reading a state pickled whole by an older stormshift (flat
        ``emitted``, ``previous`` without keys, no change marks) into today's layout."""
        if "marked" not in state:
            flat, state["emitted"] = state["emitted"], {}
            for (k, s, e), v in flat.items():
                state["emitted"].setdefault(k, {})[(s, e)] = v
            w = state["windower"]
            keys = w.keys if w is not None else {}
            state["previous"] = {k: (keys.get(k, json.loads(k)), v)
                                 for k, v in state["previous"].items()}
            state["marked"], state["held_since"] = set(), 0
            for part in (w, state["counter"]):
                if part is not None and not hasattr(part, "touched"):
                    part.touched = set()
        self.__dict__.update(state)

    # -- a keyed state object (state/keyed.py; the parts: keyed.py) -------------
    def keyed_parts(self) -> tuple[Any, dict[Hashable, Any]]:
        entries = KE.entries_of(self, None)
        return KE.shared_of(self), {k: e for k, e in entries.items() if e is not None}

    def keyed_delta(self) -> tuple[Any, list[Hashable], dict[Hashable, Any]]:
        entries = KE.entries_of(self, KE.touched(self))
        deleted: list[Hashable] = [k for k, e in entries.items() if e is None]
        return KE.shared_of(self), deleted, {k: e for k, e in entries.items() if e is not None}

    def keyed_mark(self) -> None:
        self.marked = set()
        for part in (self.windower, self.counter):
            if part is not None:
                part.touched = set()
        if self.buffer is not None:
            self.held_since = self.buffer.seq
            self.buffer.fresh = set()

    def keyed_apply(self, shared: Any, deleted: Sequence[Hashable],
                    values: Mapping[Hashable, Any]) -> None:
        """A delta applied in place (``state/keyed.py``'s optional method)."""
        KE.apply_in_place(self, shared, deleted, values)  # type: ignore[arg-type]

    @classmethod
    def from_keyed(cls, shared: Any, entries: Mapping[Hashable, Any]) -> WindowingState:
        return KE.build(cls, shared, entries)  # type: ignore[arg-type, no-any-return]

    @classmethod
    def keyed_key(cls, entry: Any) -> Any:
        return entry.key

    @classmethod
    def keyed_merge(cls, shareds: Sequence[Any], task: int, par: int) -> Any:
        return KE.merge_shared(shareds, task, par)
