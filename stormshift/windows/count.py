"""Count windows (Storm's ``Count``): the last ``length`` elements of a key,
evaluated every ``slide`` elements (``slide == length``: tumbling).

As in Storm the first windows of a sliding count window hold fewer than
``length`` elements. A count window fires once (an ON_TIME, final pane):
early and late triggers and allowed lateness do not apply. Its ``Window``
spans the event times of its elements (``[first, last + 1)``).

Order: with a timestamp field, elements are counted in event-time order:
``ReleaseBuffer`` holds them until the watermark passes them, then releases
them by ``(event_ms, stable_order(values))``, so arrival order within the
lag changes nothing; an element already behind the watermark is late (late
stream or dropped). Without a timestamp field they count in arrival order.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass, field
from typing import Any

from stormshift.errors import WindowConfigError
from stormshift.windows.aggregation import Aggregation
from stormshift.windows.panes import Pane
from stormshift.windows.window import Timing, Window, stable_order

__all__ = ["CountWindower", "ReleaseBuffer"]


@dataclass
class _Open:
    acc: Any
    first_ms: int
    last_ms: int


@dataclass
class _KeyCount:
    key: Any = None  # the key itself (a rescale routes it)
    seen: int = 0
    open: dict[int, _Open] = field(default_factory=dict)  # window number -> accumulator


class CountWindower:
    def __init__(self, length: int, slide: int, aggregation: Aggregation[Any]) -> None:
        if length <= 0 or slide <= 0 or slide > length:
            raise WindowConfigError(f"count windows need 0 < slide <= length, got length={length}, "
                                    f"slide={slide}")
        self.length = length
        self.slide = slide
        self.aggregation = aggregation
        self.keys: dict[str, _KeyCount] = {}
        self.touched: set[str] = set()  # key orders changed since cleared (derived)

    def add(self, key: Any, event_ms: int, item: Any) -> list[Pane]:
        kord = stable_order(key)
        state = self.keys.get(kord)
        if state is None:
            state = self.keys[kord] = _KeyCount(key)
        self.touched.add(kord)
        state.seen = n = state.seen + 1
        agg = self.aggregation
        first_k = -(-n // self.slide)
        last_k = (n + self.length - 1) // self.slide
        for k in range(first_k, last_k + 1):
            win = state.open.get(k)
            if win is None:
                win = state.open[k] = _Open(agg.init(), event_ms, event_ms)
            win.acc = agg.add(win.acc, item)
            win.first_ms = min(win.first_ms, event_ms)
            win.last_ms = max(win.last_ms, event_ms)
        if n % self.slide:
            return []
        done = state.open.pop(n // self.slide)
        result = agg.result(done.acc)
        window = Window(done.first_ms, done.last_ms + 1)
        return [Pane(key, window, Timing.ON_TIME, 0, result, result, True)]

    def snapshot(self) -> dict[str, Any]:
        return {"keys": dict(self.keys)}

    def restore(self, snap: dict[str, Any]) -> None:
        self.keys = dict(snap["keys"])
        self.touched = set()


class ReleaseBuffer:
    """Holds ``(key, event_ms, item)`` until the watermark passes ``event_ms``.

    ``of`` (derived) indexes the held elements by key order and is the truth: a heap
    entry it does not hold is skipped when released (``forget_key`` drops a key's
    elements without a pass over the heap; ``compact`` rebuilds the heap once those
    reach half of it); ``fresh`` names the keys held since the owner last emptied it:
    a batch reads and writes the held elements of those keys only, never the heap."""

    def __init__(self) -> None:
        self.heap: list[tuple[int, str, int, Any, Any]] = []
        self.seq = 0
        self.of: dict[str, dict[int, tuple[int, str, int, Any, Any]]] = {}
        self.fresh: set[str] = set()
        self._stale = 0

    def hold(self, key: Any, event_ms: int, item: Any) -> None:
        values = getattr(item, "values", item)
        self.seq += 1
        entry = (event_ms, stable_order(list(values)), self.seq, key, item)
        heapq.heappush(self.heap, entry)
        kord = stable_order(key)
        self.of.setdefault(kord, {})[self.seq] = entry
        self.fresh.add(kord)

    def release(self, watermark_ms: int) -> list[tuple[Any, int, Any]]:
        """Everything with ``event_ms < watermark_ms``, in event-time order."""
        out = []
        while self.heap and self.heap[0][0] < watermark_ms:
            event_ms, _, seq, key, item = heapq.heappop(self.heap)
            kord = stable_order(key)
            mine = self.of.get(kord)
            if mine is None or mine.pop(seq, None) is None:
                continue  # left behind by forget_key
            if not mine:
                del self.of[kord]
            out.append((key, event_ms, item))
        return out

    def held_of(self, kord: str) -> list[tuple[int, str, int, Any, Any]]:
        """Key ``kord``'s held elements in release order."""
        return sorted(self.of.get(kord, {}).values(), key=lambda e: e[:3])

    def forget_key(self, kord: str) -> None:
        self._stale += len(self.of.pop(kord, ()))

    def set_held(self, kord: str, held: list[tuple[int, str, int, Any, Any]]) -> None:
        if held:
            self.of[kord] = {e[2]: e for e in held}
            for e in held:
                heapq.heappush(self.heap, e)

    def compact(self) -> None:
        if self._stale * 2 >= len(self.heap):
            self.heap = [e for mine in self.of.values() for e in mine.values()]
            heapq.heapify(self.heap)
            self._stale = 0

    def snapshot(self) -> dict[str, Any]:
        live = [e for mine in self.of.values() for e in mine.values()]
        return {"heap": sorted(live, key=lambda e: e[:3]), "seq": self.seq}

    def restore(self, snap: dict[str, Any]) -> None:
        self.heap = list(snap["heap"])
        heapq.heapify(self.heap)
        self.seq = int(snap["seq"])
        self._index()

    def _index(self) -> None:
        self.of, self.fresh, self._stale = {}, set(), 0
        for e in sorted(self.heap, key=lambda e: e[:3]):
            self.of.setdefault(stable_order(e[3]), {})[e[2]] = e

    def __setstate__(self, state: dict[str, Any]) -> None:
        """Unpickle one pickled before ``of`` existed: the index is derived."""
        self.__dict__.update(state)
        if "of" not in state:
            self._index()
