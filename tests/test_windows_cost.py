"""Windowed state costs what changed (issue 32 item 2), proven by counting operations.

Each test runs the same step against a small and a large state and counts the work the
step does (entries packed, keys read, windows indexed, heap entries popped, bisection
probes): the count follows what the step touched, and is the same -- or within a log
factor -- however many windows, keys, timers or held elements are open. Nothing here
is timed (speed: ``bench/user_sessions_scale.py``, ``bench/adclicks_aging.py``).
Pure: a ``WindowingState`` driven directly, its batches written by the task's
``Snapshotter`` (no Redis).
"""

from __future__ import annotations

import heapq
import math
import pickle
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from stormshift.state.component import Snapshotter, build, pickler
from stormshift.state.component import deltas as D
from stormshift.windows import Count, Windowing
from stormshift.windows import windower as W
from stormshift.windows.panes import Accumulation, Pane
from stormshift.windows.state import WindowingState
from stormshift.windows.window import stable_order

PARTS = [("src", "default", 0)]
SIZES = (10, 2_000)  # open keys / windows / timers / held elements: small and large
COUNTING = (Windowing.tumbling(duration_ms=10).with_timestamp_field("t")
            .with_aggregation(Count()).with_allowed_lateness(5))
SESSIONS = (Windowing.session(gap_ms=5).with_timestamp_field("t").with_allowed_lateness(1_000_000)
            .with_accumulation(Accumulation.RETRACTING))


class Task:
    def __init__(self, ws: WindowingState) -> None:
        self.windowing_state = ws


class Calls:
    """How many times a patched function ran."""

    def __init__(self) -> None:
        self.n = 0

    def wrap(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        def counted(*args: Any, **kwargs: Any) -> Any:
            self.n += 1
            return fn(*args, **kwargs)
        return counted


@contextmanager
def counting(monkeypatch: pytest.MonkeyPatch, owner: Any, name: str) -> Iterator[Calls]:
    calls = Calls()
    with monkeypatch.context() as m:
        m.setattr(owner, name, calls.wrap(getattr(owner, name)))
        yield calls


def _feed(ws: WindowingState, events: list[tuple[Any, int]], watermark_ms: int) -> None:
    """One batch as the bolt runs it: the watermark, the tuples, each pane's emits kept to
    retract (``WindowedBolt._pane``), what expired windows emitted forgotten."""
    assert ws.windower is not None
    outs = list(ws.windower.advance(watermark_ms, 0))
    for key, t in events:
        outs += ws.windower.add(key, t, (key, t), 0).outputs
    for out in outs:
        if isinstance(out, Pane) and not out.is_final and ws.windower.accumulation is \
                Accumulation.RETRACTING:
            ws.keep_emitted(stable_order(out.key), out.window, [("default", [out.key])])
    ws.forget_unretractable()


def _written(keys: int) -> tuple[WindowingState, Task, Snapshotter]:
    """A task whose state holds ``keys`` keys, each an open window, already written."""
    ws = WindowingState.build(COUNTING, PARTS)
    task, snap = Task(ws), Snapshotter()
    _feed(ws, [(f"k{i}", 1) for i in range(keys)], 0)
    snap.payload(task, 1)
    snap.written(task, 1)
    return ws, task, snap


# -- snapshots ---------------------------------------------------------------------------
@pytest.mark.parametrize("compact", [False, True], ids=["delta", "base"])
def test_a_batch_packs_only_the_keys_it_touched_delta_or_base(
        monkeypatch: pytest.MonkeyPatch, compact: bool) -> None:
    """A delta packs the touched keys' entries; so does a new base (compaction): the
    entries of untouched keys are the bytes packed when they last changed."""
    packed = {}
    for keys in SIZES:
        ws, task, snap = _written(keys)
        before = dict(snap.packed["windowing_state"])
        _feed(ws, [("k1", 2), ("k2", 3), ("new", 4)], 0)
        monkeypatch.setattr(D, "should_compact", lambda *a, **k: compact)
        with counting(monkeypatch, pickler, "pack") as calls:
            payload, kind, _ = snap.payload(task, 2)
        snap.written(task, 2)
        assert kind == ("base" if compact else "delta")
        packed[keys] = calls.n
        after = snap.packed["windowing_state"]
        untouched = [k for k in before if k not in (stable_order("k1"), stable_order("k2"))]
        assert all(after[k] is before[k] for k in untouched)  # the same bytes, not re-pickled
        back = D.fold_payloads(payload, []) if compact else None
        if back is not None:
            assert back["windowing_state"].snapshot() == ws.snapshot()
    assert packed == {SIZES[0]: 3, SIZES[1]: 3}


def test_a_restored_task_keeps_the_packed_entries_it_read(monkeypatch: pytest.MonkeyPatch) -> None:
    """A restore (base + deltas) keeps the packed entries it read: the next base packs
    what the next batch touched, nothing it restored."""
    ws, _task, snap = _written(SIZES[1])
    monkeypatch.setattr(D, "should_compact", lambda *a, **k: False)
    _feed(ws, [("k1", 2)], 0)
    base = pickle.dumps({"windowing_state": snap._parts("windowing_state", ws)})
    point = type("Point", (), {"base": base, "deltas": [], "version": 2, "delta_bytes": 0})()
    fresh = Task(None)  # type: ignore[arg-type]
    build(fresh, point)
    assert fresh.windowing_state.snapshot() == ws.snapshot()
    assert len(fresh._stormshift_snap.packed["windowing_state"]) == SIZES[1]
    _feed(fresh.windowing_state, [("k7", 3)], 0)
    monkeypatch.setattr(D, "should_compact", lambda *a, **k: True)
    with counting(monkeypatch, pickler, "pack") as calls:
        fresh._stormshift_snap.payload(fresh, 3)
    assert calls.n == 1


# -- per element and per pane ------------------------------------------------------------
def test_a_session_element_bisects_the_keys_sessions_instead_of_scanning_them(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """An element of a key with n open sessions probes O(log n) of them (the sorted
    index), merges with the ones it meets and leaves the others unread."""
    probes = {}
    for n in SIZES:
        ws = WindowingState.build(SESSIONS, PARTS)
        assert ws.windower is not None
        _feed(ws, [("u", 100 * i) for i in range(n)], 0)  # n sessions of one key, gap 5
        assert len(ws.windower.windows[stable_order("u")]) == n
        with counting(monkeypatch, W, "_start") as calls:
            _feed(ws, [("u", 100 * (n // 2) + 3)], 0)  # extends one session in the middle
        probes[n] = calls.n
        assert probes[n] <= math.ceil(math.log2(n + 1)) + 1
        assert len(ws.windower.windows[stable_order("u")]) == n
    assert probes[SIZES[1]] > probes[SIZES[0]]  # a log factor, not a constant in disguise


def test_an_expired_window_forgets_its_own_panes_not_the_keys_others(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Retractable panes: when a window expires, what its panes emitted is forgotten per
    expired window; the key's other open windows are not looked at."""
    taken = {}
    for n in SIZES:
        ws = WindowingState.build(SESSIONS.with_allowed_lateness(50), PARTS)
        assert ws.windower is not None
        _feed(ws, [("u", 0)] + [("u", 10_000 + 100 * i) for i in range(n)], 0)
        _feed(ws, [], 6)  # [0, 5) fires ON_TIME: its pane kept to retract
        assert (0, 5) in ws.emitted[stable_order("u")]
        with counting(monkeypatch, WindowingState, "take_emitted") as calls:
            _feed(ws, [], 60)  # [0, 5) expires unfired since its pane
        taken[n] = calls.n
        assert (0, 5) not in ws.emitted.get(stable_order("u"), {})
        assert len(ws.windower.windows[stable_order("u")]) == n
    assert taken == {SIZES[0]: 1, SIZES[1]: 1}


def test_firing_pops_what_the_watermark_passed_not_every_open_window(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The watermark fires through the indexes by time: pops follow the times it passed
    (one end and one expiry, shared by 5 keys' windows), not the windows or timers open."""
    pops = {}
    for n in SIZES:
        ws = WindowingState.build(COUNTING, PARTS)
        assert ws.windower is not None
        _feed(ws, [(f"early{i}", 1) for i in range(5)] + [(f"k{i}", 100) for i in range(n)], 0)
        for i in range(n):
            ws.windower.set_timer(f"k{i}", 1_000 + i)
        with counting(monkeypatch, heapq, "heappop") as calls:
            outs = ws.windower.advance(20, 0)  # [0, 10) of 5 keys fires and expires
        assert sum(isinstance(o, Pane) for o in outs) == 5
        pops[n] = calls.n
    assert pops[SIZES[0]] == pops[SIZES[1]] == 2  # [0, 10)'s end, then its expiry


# -- a batch's keys ----------------------------------------------------------------------
def test_a_batch_reads_the_entries_of_its_keys_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """``keyed_delta`` reads the keys the batch touched: entries built for 2 keys whether
    2 or 2,000 keys hold windows and timers."""
    from stormshift.windows import keyed as KE

    built = {}
    for n in SIZES:
        ws, task, snap = _written(n)
        for i in range(n):
            ws.windower.set_timer(f"k{i}", 5_000 + i)  # type: ignore[union-attr]
        snap.payload(task, 2)
        snap.written(task, 2)
        _feed(ws, [("k1", 3), ("k2", 4)], 0)
        with counting(monkeypatch, KE, "KeyEntry") as calls:
            _, deleted, values = ws.keyed_delta()
        built[n] = calls.n
        assert deleted == [] and sorted(values) == [stable_order("k1"), stable_order("k2")]
    assert built == {SIZES[0]: 2, SIZES[1]: 2}


class _Watched(list):  # type: ignore[type-arg]
    """A heap that counts Python-level walks over it (heapq's C functions do not walk)."""

    walks = 0

    def __iter__(self) -> Iterator[Any]:
        type(self).walks += 1
        return super().__iter__()


def test_held_elements_are_read_per_key_never_by_a_walk_of_the_buffer() -> None:
    """Count windows by event time hold elements until the watermark: a batch's delta
    reads the held elements of the keys it held, not the whole buffer."""
    ws = WindowingState.build(Windowing.tumbling(count=3).with_timestamp_field("t").with_lag(10),
                              PARTS)
    assert ws.buffer is not None
    task, snap = Task(ws), Snapshotter()
    for i in range(SIZES[1]):
        ws.buffer.hold(f"k{i}", 100 + i, (f"k{i}", 100 + i))
    snap.payload(task, 1)
    snap.written(task, 1)
    ws.buffer.heap = _Watched(ws.buffer.heap)
    _Watched.walks = 0
    ws.buffer.hold("k3", 5, ("k3", 5))
    _shared, deleted, values = ws.keyed_delta()
    assert _Watched.walks == 0 and deleted == [] and list(values) == [stable_order("k3")]
    assert [e[0] for e in values[stable_order("k3")].held] == [5, 103]


def test_a_delta_applied_in_place_costs_its_keys_amortised(monkeypatch: pytest.MonkeyPatch) -> None:
    """A stale live instance taking deltas (``keyed_apply``) indexes the windows of the
    keys each delta names; the heaps' stale entries are rebuilt away at most once per
    as many entries left behind: over 40 deltas of 3 keys each, ~O(3 x 40) windows
    indexed with 2,000 keys open as with 10 (plus one rebuild's worth at most)."""
    tracked = {}
    for n in SIZES:
        ws, task, snap = _written(n)
        stale = pickle.loads(pickle.dumps(ws))
        monkeypatch.setattr(D, "should_compact", lambda *a, **k: False)
        deltas = []
        for b in range(40):
            _feed(ws, [(f"k{(3 * b + j) % n}", 2) for j in range(3)], 0)
            payload, _, _ = snap.payload(task, b + 2)
            snap.written(task, b + 2)
            deltas.append(pickle.loads(payload))
        with counting(monkeypatch, W.Windower, "_track") as calls:
            for delta in deltas:
                shared, deleted, values = delta["keyed"]["windowing_state"]
                stale.keyed_apply(shared, deleted, {k: pickle.loads(v) for k, v in values.items()})
        tracked[n] = calls.n
        assert stale.snapshot() == ws.snapshot()
    assert tracked[SIZES[0]] <= 2 * 120 + 2 * SIZES[0]
    assert tracked[SIZES[1]] <= 2 * 120  # 2,000 keys open: no pass over them
