"""A ``WindowingState`` as per-key entries and one shared part (``state/keyed.py``'s protocol).

Words: an *entry* is everything a task keeps for one key (entry id: the key's
``stable_order``): its time windows and their accumulators, its event-time
timers, what its panes emitted (to retract it), its previous ON_TIME pane (for
``get_expired``), its count-window state and the elements it has held in the
release buffer. The *shared* part is the rest: the window config, the
watermark tracker, the task's clocks and its counters. A batch writes the
shared part and the entries of the keys it touched (``touched``): the cost
follows the keys changed, not the windows open. An entry with nothing left
(its windows expired) is deleted. What the panes of an expired window emitted is
dropped when it expires (``WindowingState.forget_unretractable``), so a restore
gives back the same state as the live one.

Rescale (``merge_shared``): entries go to the task their key routes to; the
shared parts of the old tasks merge into each new task's deterministically:
per input partition the largest event time and last-seen time any old task
saw, the union of expected partitions (in old-task order), the largest
watermark, processing time and next watermark step (every task of a bolt gets
the same ones from the driver's batch record, so the largest is the current
one; a tuple-at-a-time task's watermark is a min over partitions' max event
times, and the max of the old tasks' watermarks is still one the partitions
allowed), ended if any ended; the counters' totals go to new task 0 (the
others start at 0), so their sum is kept.
"""

from __future__ import annotations

import heapq
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from stormshift.windows.count import CountWindower, ReleaseBuffer
from stormshift.windows.triggers import TriggerState
from stormshift.windows.watermark import WatermarkTracker
from stormshift.windows.window import Window
from stormshift.windows.windower import Windower, WindowState

__all__ = ["KeyEntry", "apply_in_place", "entries_of", "merge_shared", "shared_of"]

_NONE = object()  # no key known yet (a key may be None itself)


@dataclass
class KeyEntry:
    """Everything one task keeps for one key (module doc)."""

    key: Any
    windows: dict[Window, WindowState] = field(default_factory=dict)
    timers: list[tuple[int, str]] = field(default_factory=list)  # (at_ms, tag), sorted
    emitted: dict[tuple[int, int], list[tuple[str, list[Any]]]] = field(default_factory=dict)
    previous: list[Any] | None = None
    count: Any = None  # count.py's per-key state
    held: list[tuple[Any, ...]] = field(default_factory=list)  # ReleaseBuffer heap entries

    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        """Pickled flat: plain tuples, not four dataclasses each naming its class and
        fields (a task pickles each entry on its own: ``state/keyed.py``, packed), so an
        entry costs its data, about a third of the bytes, and pickles faster."""
        windows = []
        for w, st in self.windows.items():
            t, retract = st.trigger, st.retract
            windows.append((w.start_ms, w.end_ms, st.acc, st.delta, t.count, t.deadline_ms,
                            t.panes, t.on_time_fired,
                            [(r.start_ms, r.end_ms, res) for r, res in retract] if retract
                            else []))  # (no comprehension's call for the usual empty one)
        return _unflat, (self.key, windows, self.timers, self.emitted, self.previous,
                         self.count, self.held)


def _unflat(key: Any, windows: list[tuple[Any, ...]], timers: list[tuple[int, str]],
            emitted: dict[tuple[int, int], list[tuple[str, list[Any]]]],
            previous: list[Any] | None, count: Any, held: list[tuple[Any, ...]]) -> KeyEntry:
    """A ``KeyEntry`` from its flat pickle (``KeyEntry.__reduce__``)."""
    states = {}
    for start, end, acc, delta, n, deadline, panes, fired, retract in windows:
        states[Window(start, end)] = WindowState(
            acc, delta, TriggerState(n, deadline, panes, fired),
            [(Window(s, e), res) for s, e, res in retract])
    return KeyEntry(key, states, timers, emitted, previous, count, held)


def shared_of(ws: Any) -> dict[str, Any]:
    """The shared part of ``ws`` (a ``WindowingState``): config, clocks, tracker, counters."""
    w, c, t = ws.windower, ws.counter, ws.tracker
    return {
        "windower": None if w is None else {
            "assigner": w.assigner, "trigger": w.trigger, "accumulation": w.accumulation,
            "aggregation": w.aggregation, "allowed_lateness_ms": w.allowed_lateness_ms,
            "watermark_ms": w.watermark_ms},
        "counter": None if c is None else {"length": c.length, "slide": c.slide,
                                           "aggregation": c.aggregation},
        "buffer_seq": None if ws.buffer is None else ws.buffer.seq,
        "tracker": {"lag_ms": t.lag_ms, "idle_timeout_ms": t.idle_timeout_ms, **t.snapshot()},
        "processing_ms": ws.processing_ms, "next_watermark_ms": ws.next_watermark_ms,
        "counters": dict(ws.counters),
    }


def touched(ws: Any) -> set[str]:
    """Keys whose entries may have changed: marked by the windower, the count windows,
    ``WindowingState`` and the release buffer (keys held since last emptied)."""
    out = set(ws.marked)
    if ws.windower is not None:
        out |= ws.windower.touched
    if ws.counter is not None:
        out |= ws.counter.touched
    if ws.buffer is not None:
        out |= ws.buffer.fresh
    return out


def entries_of(ws: Any, kords: set[str] | None) -> dict[str, KeyEntry | None]:
    """The entries of ``kords`` (None: every key), None for a key with nothing left: each
    read through the per-key indexes (windows, ``timers_of``, the buffer's ``of``), so the
    cost follows ``kords``, not the keys held."""
    w, c, b = ws.windower, ws.counter, ws.buffer
    if kords is None:
        kords = set(ws.emitted) | set(ws.previous)
        kords |= set(w.windows) | set(w.keys) if w is not None else set()
        kords |= set(c.keys) if c is not None else set()
        kords |= set(b.of) if b is not None else set()
    timers = w.timers_of if w is not None else {}
    out: dict[str, KeyEntry | None] = {}
    for kord in sorted(kords):
        windows = w.windows.get(kord, {}) if w is not None else {}
        emitted = ws.emitted.get(kord, {})
        prev = ws.previous.get(kord)
        count = c.keys.get(kord) if c is not None else None
        mine_held = b.held_of(kord) if b is not None else []
        mine_timers = sorted(timers.get(kord, []))
        if not (windows or mine_timers or emitted or prev or count or mine_held):
            if w is not None:
                w.keys.pop(kord, None)
            out[kord] = None
            continue
        key = w.keys.get(kord, _NONE) if w is not None else _NONE  # (one lookup)
        if key is _NONE:
            key = prev[0] if prev is not None else count.key if count is not None else \
                mine_held[0][3] if mine_held else None
        out[kord] = KeyEntry(key, dict(windows), mine_timers, dict(emitted),
                             None if prev is None else list(prev[1]), count, mine_held)
    return out


def build(cls: Any, shared: Mapping[str, Any], entries: Mapping[str, KeyEntry]) -> Any:
    """A ``cls`` (``WindowingState``) from its shared part and entries."""
    t = shared["tracker"]
    tracker = WatermarkTracker(t["lag_ms"], idle_timeout_ms=t["idle_timeout_ms"])
    tracker.restore(t)
    kords = sorted(entries)
    windower = counter = buffer = None
    if shared["windower"] is not None:
        cfg = dict(shared["windower"])
        watermark_ms = cfg.pop("watermark_ms")
        windower = Windower(**cfg)
        windower.restore({
            "windows": {k: dict(entries[k].windows) for k in kords if entries[k].windows},
            "keys": {k: entries[k].key for k in kords if entries[k].windows or entries[k].timers},
            "watermark_ms": watermark_ms,
            "timers": [(at, k, tag) for k in kords for at, tag in entries[k].timers]})
    if shared["counter"] is not None:
        counter = CountWindower(**shared["counter"])
        counter.keys = {k: entries[k].count for k in kords if entries[k].count is not None}
    if shared["buffer_seq"] is not None:
        buffer = ReleaseBuffer()
        for k in kords:
            buffer.set_held(k, entries[k].held)
        buffer.seq = shared["buffer_seq"]
    ws = cls(tracker, windower, counter, buffer, shared["processing_ms"],
             shared["next_watermark_ms"], dict(shared["counters"]))
    ws.emitted = {k: dict(entries[k].emitted) for k in kords if entries[k].emitted}
    ws.previous = {k: (entries[k].key, list(entries[k].previous or ())) for k in kords
                   if entries[k].previous is not None}
    ws.held_since = ws.buffer.seq if ws.buffer is not None else 0
    return ws


def apply_in_place(ws: Any, shared: Mapping[str, Any], deleted: Sequence[str],
                   values: Mapping[str, KeyEntry]) -> None:
    """One delta's keyed section applied to a live ``ws`` (a task's live instance catching
    up: ``taskstate.catch_up``): the shared part replaced, the entries of the keys the
    delta names replaced or removed; the result is what ``build`` makes of the same
    parts. Costs the keys the delta holds: their old index entries stay in the heaps,
    skipped when popped, until a ``compact`` (amortised) rebuilds them."""
    affected = set(deleted) | set(values)
    t = shared["tracker"]
    ws.tracker = WatermarkTracker(t["lag_ms"], idle_timeout_ms=t["idle_timeout_ms"])
    ws.tracker.restore(t)
    ws.processing_ms, ws.next_watermark_ms = shared["processing_ms"], shared["next_watermark_ms"]
    ws.counters = dict(shared["counters"])
    kords = sorted(values)
    w, c, b = ws.windower, ws.counter, ws.buffer
    if w is not None:
        w.watermark_ms = shared["windower"]["watermark_ms"]
        for k in sorted(affected):
            _forget(w, k)
        for k in kords:
            e = values[k]
            _set(w, k, e.key, dict(e.windows), list(e.timers))
        _compact(w)
        w.touched = set()
    if c is not None:
        for k in affected:
            c.keys.pop(k, None)
        c.keys.update((k, values[k].count) for k in kords if values[k].count is not None)
        c.touched = set()
    if b is not None and shared["buffer_seq"] is not None:
        for k in sorted(affected):
            b.forget_key(k)
        for k in kords:
            b.set_held(k, list(values[k].held))
        b.compact()
        b.seq = shared["buffer_seq"]
        b.fresh = set()
    for k in affected:
        ws.emitted.pop(k, None)
        ws.previous.pop(k, None)
    for k in kords:
        e = values[k]
        if e.emitted:
            ws.emitted[k] = dict(e.emitted)
        if e.previous is not None:
            ws.previous[k] = (e.key, list(e.previous))
    ws.marked = set()
    ws.held_since = b.seq if b is not None else 0


def _forget(w: Windower, kord: str) -> None:
    """Drop key ``kord`` from a windower: its windows, timers and key. Its heap entries
    stay behind, skipped when popped (``windower.py``), counted in ``_stale``."""
    states = w.windows.pop(kord, None)
    mine = w.timers_of.pop(kord, None)
    w._stale += (len(states) if states else 0) + (len(mine) if mine else 0)
    w.keys.pop(kord, None)
    w._sessions.pop(kord, None)


def _set(w: Windower, kord: str, key: Any, windows: dict[Window, WindowState],
         timers: list[tuple[int, str]]) -> None:
    """Key ``kord`` as an entry holds it (after ``_forget``), indexed."""
    if windows:
        w.windows[kord] = windows
        for window in sorted(windows):
            w._track(kord, window)
        if w.assigner.merging and len(windows) > 1:  # (one: implicit, windower.py)
            w._sessions[kord] = sorted(windows)
    if windows or timers:
        w.keys[kord] = key
    for at, tag in timers:
        heapq.heappush(w.timers, (at, kord, tag))
        w.timers_of.setdefault(kord, []).append((at, tag))


def _compact(w: Windower) -> None:
    """Rebuild the windower's heaps from its live windows and timers once the entries
    ``_forget`` left behind reach half of them: amortised O(1) per entry left."""
    if w._stale * 2 < w.indexed() + len(w.timers):
        return
    w.timers = w.live_timers()
    heapq.heapify(w.timers)
    w._stale = 0
    w.reindex()


def merge_shared(shareds: Sequence[Mapping[str, Any]], task: int, par: int) -> dict[str, Any]:
    """The shared part of new task ``task`` of ``par`` from the old tasks' (module doc)."""
    first = shareds[0]
    out = dict(first)
    if first["windower"] is not None:
        out["windower"] = {**first["windower"], "watermark_ms": max(
            s["windower"]["watermark_ms"] for s in shareds)}
    seqs = [s["buffer_seq"] for s in shareds if s["buffer_seq"] is not None]
    out["buffer_seq"] = max(seqs) if seqs else None
    top: dict[Any, int] = {}
    seen: dict[Any, int] = {}
    expected: dict[Any, None] = {}
    for s in shareds:
        t = s["tracker"]
        for p, ms in t["max_event_ms"].items():
            top[p] = max(top.get(p, ms), ms)
        for p, ms in t["last_seen_ms"].items():
            seen[p] = max(seen.get(p, ms), ms)
        expected.update(dict.fromkeys(t["expected"]))
    out["tracker"] = {**first["tracker"], "max_event_ms": top, "last_seen_ms": seen,
                      "expected": list(expected),
                      "watermark_ms": max(s["tracker"]["watermark_ms"] for s in shareds),
                      "ended": any(s["tracker"]["ended"] for s in shareds)}
    out["processing_ms"] = max(s["processing_ms"] for s in shareds)
    steps = [s["next_watermark_ms"] for s in shareds if s["next_watermark_ms"] is not None]
    out["next_watermark_ms"] = max(steps) if steps else None
    names = sorted({n for s in shareds for n in s["counters"]})
    out["counters"] = {n: sum(s["counters"].get(n, 0) for s in shareds) if task == 0 else 0
                       for n in names}
    return out
