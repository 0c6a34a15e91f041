"""A ``WindowingState`` as per-key entries and one shared part (``state/keyed.py``'s protocol).

Words: an *entry* is everything a task keeps for one key (entry id: the key's
``stable_order``): its time windows and their accumulators, its event-time
timers, what its panes emitted (to retract it), its previous ON_TIME pane (for
``get_expired``), its count-window state and the elements it has held in the
release buffer. The *shared* part is the rest: the window config, the
watermark tracker, the task's clocks and its counters. A batch writes the
shared part and the entries of the keys it touched (``touched``): the cost
follows the keys changed, not the windows open. An entry with nothing left
(its windows expired) is deleted; ``retired`` drops what can no longer be read
(what expired windows emitted) from the live state too, so a restore gives back
the same state as the live one.

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
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from stormshift.windows.count import CountWindower, ReleaseBuffer
from stormshift.windows.triggers import TriggerState
from stormshift.windows.watermark import WatermarkTracker
from stormshift.windows.window import Window, stable_order
from stormshift.windows.windower import Windower, WindowState

__all__ = ["KeyEntry", "apply_in_place", "entries_of", "merge_shared", "shared_of"]


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
        windows = [(w.start_ms, w.end_ms, st.acc, st.delta, st.trigger.count,
                    st.trigger.deadline_ms, st.trigger.panes, st.trigger.on_time_fired,
                    [(r.start_ms, r.end_ms, res) for r, res in st.retract])
                   for w, st in self.windows.items()]
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


def _by_kord(items: Iterable[tuple[str, Any]], wanted: set[str] | None) -> dict[str, list[Any]]:
    out: dict[str, list[Any]] = {}
    for kord, item in items:
        if wanted is None or kord in wanted:
            out.setdefault(kord, []).append(item)
    return out


def _held(ws: Any, wanted: set[str] | None) -> dict[str, list[Any]]:
    if ws.buffer is None or not ws.buffer.heap:
        return {}
    memo: dict[int, str] = {}

    def kord(entry: tuple[Any, ...]) -> str:
        key = entry[3]
        found = memo.get(id(key))
        if found is None:
            found = memo[id(key)] = stable_order(key)
        return found

    return {k: sorted(v, key=lambda e: e[:3])
            for k, v in _by_kord(((kord(e), e) for e in ws.buffer.heap), wanted).items()}


def touched(ws: Any, held_since: int) -> set[str]:
    """Keys whose entries may have changed: marked by the windower, the count windows and
    ``WindowingState``, and keys of elements held since seq ``held_since``."""
    out = set(ws.marked)
    if ws.windower is not None:
        out |= ws.windower.touched
    if ws.counter is not None:
        out |= ws.counter.touched
    if ws.buffer is not None:
        out |= {stable_order(e[3]) for e in ws.buffer.heap if e[2] > held_since}
    return out


def entries_of(ws: Any, kords: set[str] | None) -> dict[str, KeyEntry | None]:
    """The entries of ``kords`` (None: every key), None for a key with nothing left; what
    can no longer be read is dropped from ``ws`` first (module doc: ``retired``)."""
    w, c = ws.windower, ws.counter
    if kords is None:
        kords = set(ws.emitted) | set(ws.previous)
        kords |= set(w.windows) | set(w.keys) if w is not None else set()
        kords |= set(c.keys) if c is not None else set()
        kords |= set(_held(ws, None))
    timers = w.timers_of if w is not None else {}  # the per-key index: no scan of every timer
    held = _held(ws, kords)
    out: dict[str, KeyEntry | None] = {}
    for kord in sorted(kords):
        windows = w.windows.get(kord, {}) if w is not None else {}
        _retire(ws, kord, windows)
        emitted = ws.emitted.get(kord, {})
        prev = ws.previous.get(kord)
        count = c.keys.get(kord) if c is not None else None
        mine_held, mine_timers = held.get(kord, []), sorted(timers.get(kord, []))
        if not (windows or mine_timers or emitted or prev or count or mine_held):
            if w is not None:
                w.keys.pop(kord, None)
            out[kord] = None
            continue
        if w is not None and kord in w.keys:
            key = w.keys[kord]
        elif prev is not None:
            key = prev[0]
        elif count is not None:
            key = count.key
        else:
            key = mine_held[0][3] if mine_held else None
        out[kord] = KeyEntry(key, dict(windows), mine_timers, dict(emitted),
                             None if prev is None else list(prev[1]), count, mine_held)
    return out


def _retire(ws: Any, kord: str, windows: Mapping[Window, WindowState]) -> None:
    """Drop what a key's panes emitted for windows no live window can retract any more. A span
    its own live window retracts is kept without a look at the key's other windows."""
    emitted = ws.emitted.get(kord)
    if not emitted:
        return
    needed: set[tuple[int, int]] | None = None  # built only when a span is not its own window's
    for span in list(emitted):
        own = windows.get(Window(*span))
        if own is not None and any(w.start_ms == span[0] and w.end_ms == span[1]
                                   for w, _ in own.retract):
            continue  # the common case: a live window retracts its own last pane
        if needed is None:
            needed = {(w.start_ms, w.end_ms) for st in windows.values() for w, _ in st.retract}
        if span not in needed:
            del emitted[span]
    if not emitted:
        del ws.emitted[kord]


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
        buffer.heap = [e for k in kords for e in entries[k].held]
        heapq.heapify(buffer.heap)
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
    parts. Costs the keys the delta holds plus one pass over the heaps (timers, the
    windows' due and expiry indexes, held elements), not a rebuild of every key."""
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
        for k in affected:
            w.windows.pop(k, None)
            w.keys.pop(k, None)
        # the indexes drop the keys' entries (stale ones too: a fresh build has none)
        w.timers = [x for x in w.timers if x[1] not in affected]
        w._due = [x for x in w._due if x[2] not in affected]
        w._expiry = [x for x in w._expiry if x[2] not in affected]
        w._deadlines = [x for x in w._deadlines if x[3] not in affected]
        heapq.heapify(w._deadlines)
        heapq.heapify(w.timers)
        w.index_timers()
        heapq.heapify(w._due)
        heapq.heapify(w._expiry)
        for k in kords:
            e = values[k]
            if e.windows:
                w.windows[k] = dict(e.windows)
                for window in sorted(e.windows):
                    w._track(k, window)
            if e.windows or e.timers:
                w.keys[k] = e.key
            for at, tag in e.timers:
                heapq.heappush(w.timers, (at, k, tag))
                w.timers_of.setdefault(k, []).append((at, tag))
        w.touched = set()
    if c is not None:
        for k in affected:
            c.keys.pop(k, None)
        c.keys.update((k, values[k].count) for k in kords if values[k].count is not None)
        c.touched = set()
    if b is not None and shared["buffer_seq"] is not None:
        kept = [e for k, held in _held(ws, None).items() if k not in affected for e in held]
        b.heap = kept + [e for k in kords for e in values[k].held]
        heapq.heapify(b.heap)
        b.seq = shared["buffer_seq"]
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
