"""A windowed bolt's state as per-key entries (``windows/keyed.py``, ``state/keyed.py``).

Pure: a ``WindowingState`` driven directly, its batches' deltas built by the
task's ``Snapshotter`` and folded back (no Redis): a batch writes the keys it
touched and deletes the keys whose windows expired; base + deltas restore the
same state; entries split by the routing hash and shared parts merge as the
module says; a rescaled windowed bolt fires the panes of one that was not.
"""

from __future__ import annotations

import pickle
from collections import Counter as Tally
from typing import Any

import pytest

from stormshift.adapters.routing import hash_one
from stormshift.errors import StateError
from stormshift.state.component import Snapshotter
from stormshift.state.component import deltas as D
from stormshift.state.keyed import KeyedParts, is_keyed, unpack
from stormshift.state.rescale import split
from stormshift.topology.graph import ComponentDef, ComponentKind, Grouping, GroupingKind, InputDef
from stormshift.windows import Count, Windowing
from stormshift.windows.aggregation import Collect
from stormshift.windows.keyed import merge_shared
from stormshift.windows.panes import Accumulation, Pane
from stormshift.windows.state import WindowingState
from stormshift.windows.triggers import Trigger
from stormshift.windows.window import Timing, stable_order

PARTS = [("src", "default", 1), ("src", "default", 2)]


@pytest.fixture(autouse=True)
def _no_compaction(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every batch after the first writes a delta (here we read the deltas)."""
    monkeypatch.setattr(D, "should_compact", lambda *a, **k: False)


class Task:
    """A windowed bolt task's instance as the Snapshotter sees it: one state attribute."""

    def __init__(self, ws: WindowingState) -> None:
        self.windowing_state = ws


def _state(windowing: Windowing) -> WindowingState:
    return WindowingState.build(windowing, PARTS)


def _feed(ws: WindowingState, events: list[tuple[Any, int]], watermark_ms: int) -> list[Any]:
    """One batch: the watermark first (as ``start_batch``), then the tuples; the bolt's
    side of each pane (``emitted`` / ``previous``) kept as ``WindowedBolt._pane`` does."""
    assert ws.windower is not None
    outs = list(ws.windower.advance(watermark_ms, 0))
    for key, t in events:
        outs += ws.windower.add(key, t, (key, t), 0).outputs
    collects = isinstance(ws.windower.aggregation, Collect)
    for out in outs:
        if isinstance(out, Pane):
            kord = stable_order(out.key)
            if collects and out.timing is Timing.ON_TIME:
                ws.set_previous(kord, out.key, list(out.result))
            if not out.is_final:
                ws.keep_emitted(kord, out.window, [("default", [out.key, out.result])])
    return outs


def _batch(snap: Snapshotter, task: Task, txid: int) -> tuple[dict[str, Any], str]:
    payload, kind, _prev = snap.payload(task, txid)
    snap.written(task, txid)
    return pickle.loads(payload), kind


def _keyed(delta: dict[str, Any]) -> tuple[Any, list[Any], dict[Any, Any]]:
    """The windowing state's keyed section of ``delta``, its entries unpacked (a task
    stores each entry as its own pickle: ``state/keyed.py``)."""
    assert delta["keyed_packed"]
    shared, deleted, values = delta["keyed"]["windowing_state"]
    return shared, deleted, unpack(values)


COUNTING = (Windowing.tumbling(duration_ms=10).with_timestamp_field("t")
            .with_aggregation(Count()).with_allowed_lateness(5))


def test_a_batch_writes_the_keys_it_touched_and_deletes_the_expired_ones() -> None:
    ws = _state(COUNTING)
    task, snap = Task(ws), Snapshotter()
    _feed(ws, [(f"k{i}", 1) for i in range(100)] + [(f"k{i}", 12) for i in range(100)], 0)
    base, kind = _batch(snap, task, 1)
    assert kind == "base" and isinstance(base["windowing_state"], KeyedParts)
    assert len(base["windowing_state"].entries) == 100
    # batch 2: the watermark passes [0, 10) + lateness for every key; 3 keys get a tuple
    _feed(ws, [("k1", 13), ("k2", 14), ("new", 15)], 15)
    delta, kind = _batch(snap, task, 2)
    assert kind == "delta" and delta["whole"] == {} and delta["keys"] == {}
    _, deleted, values = _keyed(delta)
    assert deleted == []  # every old key keeps its window [10, 20)
    # every key's [0, 10) expired: a change of each key (its entry rewritten without it)
    assert sorted(values) == sorted(stable_order(k) for k in [*(f"k{i}" for i in range(100)),
                                                              "new"])
    assert all([w.start_ms for w in e.windows] == [10] for e in values.values())
    # batch 3: [10, 20) expires for everyone: the entries are deleted
    _feed(ws, [("late", 21)], 26)
    delta, _ = _batch(snap, task, 3)
    _, deleted, values = _keyed(delta)
    assert len(deleted) == 101 and list(values) == [stable_order("late")]
    # batch 4 touches one key: one entry, whatever is open
    _feed(ws, [("late", 22)], 26)
    delta, _ = _batch(snap, task, 4)
    assert _keyed(delta)[1:] == ([], {stable_order("late"): ws_entry(ws)})


def ws_entry(ws: WindowingState) -> Any:
    from stormshift.windows.keyed import entries_of

    return entries_of(ws, {stable_order("late")})[stable_order("late")]


def test_a_delta_holds_k_touched_keys_and_m_expired_ones() -> None:
    ws = _state(COUNTING)
    task, snap = Task(ws), Snapshotter()
    _feed(ws, [(f"old{i}", 1) for i in range(40)] + [(f"keep{i}", 30) for i in range(500)], 0)
    _batch(snap, task, 1)
    _feed(ws, [(f"keep{i}", 31) for i in range(7)], 16)  # k = 7 touched, m = 40 expired
    delta, _ = _batch(snap, task, 2)
    _, deleted, values = _keyed(delta)
    assert sorted(deleted) == sorted(stable_order(f"old{i}") for i in range(40))
    assert sorted(values) == sorted(stable_order(f"keep{i}") for i in range(7))
    assert all(e.windows[next(iter(e.windows))].delta == 2 for e in values.values())


def _run(windowing: Windowing, batches: list[tuple[list[tuple[Any, int]], int]]
         ) -> tuple[WindowingState, list[bytes]]:
    ws = _state(windowing)
    task, snap = Task(ws), Snapshotter()
    payloads = []
    for txid, (events, wm) in enumerate(batches, 1):
        _feed(ws, events, wm)
        payload, _kind, _ = snap.payload(task, txid)
        snap.written(task, txid)
        payloads.append(payload)
    return ws, payloads


WINDOWINGS = [
    COUNTING,
    Windowing.sliding(length_ms=20, interval_ms=10).with_timestamp_field("t"),
    Windowing.session(gap_ms=5).with_timestamp_field("t").with_allowed_lateness(10)
    .with_accumulation(Accumulation.RETRACTING).with_trigger(Trigger(early_every_count=2, late_every_count=2)),
]
BATCHES = [([("a", 1), ("b", 2), (("x", 1), 3)], 0), ([("a", 11), ("b", 4), ("c", 25)], 5),
           ([("a", 3), ("c", 27)], 12), ([("d", 40)], 30), ([("d", 41), ("a", 44)], 35)]


@pytest.mark.parametrize("windowing", WINDOWINGS, ids=["count", "sliding", "sessions-retracting"])
def test_base_and_deltas_restore_exactly_the_live_state(windowing: Windowing) -> None:
    ws, payloads = _run(windowing, BATCHES)
    back = D.fold_payloads(payloads[0], payloads[1:])["windowing_state"]
    assert type(back) is WindowingState and back.snapshot() == ws.snapshot()
    assert back.event_time_snapshot() == ws.event_time_snapshot()
    # and the restored state goes on as the live one does
    _feed(ws, [("a", 50)], 60)
    _feed(back, [("a", 50)], 60)
    assert back.snapshot() == ws.snapshot()


def test_a_batch_writes_the_same_round_whatever_the_windows_touched() -> None:
    """Bytes follow the keys touched; there is one payload either way (one fenced write)."""
    sizes = {}
    for n in (10, 10_000):
        ws = _state(COUNTING)
        task, snap = Task(ws), Snapshotter()
        _feed(ws, [(f"k{i}", 1) for i in range(10_000)], 0)
        _batch(snap, task, 1)
        _feed(ws, [(f"k{i}", 2) for i in range(n)], 0)
        payload, kind, _ = snap.payload(task, 2)
        assert kind == "delta"
        sizes[n] = len(payload)
    assert sizes[10] * 100 < sizes[10_000]


def test_timers_and_count_windows_are_per_key_entries() -> None:
    ws = _state(Windowing.tumbling(duration_ms=10).with_timestamp_field("t"))
    assert ws.windower is not None
    ws.windower.set_timer("a", 100, "t1")
    task, snap = Task(ws), Snapshotter()
    base, _ = _batch(snap, task, 1)
    entry = base["windowing_state"].objects()[stable_order("a")]
    assert entry.timers == [(100, "t1")] and entry.windows == {}
    ws.windower.advance(200, 0)  # the timer fires: nothing left of "a"
    delta, _ = _batch(snap, task, 2)
    assert _keyed(delta)[1:] == ([stable_order("a")], {})

    cs = _state(Windowing.tumbling(count=3).with_timestamp_field("t").with_lag(10))
    assert cs.buffer is not None and cs.counter is not None
    task, snap = Task(cs), Snapshotter()
    _batch(snap, task, 1)
    for i in range(4):
        cs.buffer.hold(f"k{i % 2}", i, (f"k{i % 2}", i))
    for key, t, item in cs.buffer.release(2):
        cs.counter.add(key, t, item)
    delta, _ = _batch(snap, task, 2)
    _, deleted, values = _keyed(delta)
    assert deleted == [] and sorted(values) == [stable_order("k0"), stable_order("k1")]
    assert values[stable_order("k0")].count.seen == 1 and len(values[stable_order("k0")].held) == 1
    back = D.fold_payloads(*_chain(cs, snap, task))["windowing_state"]
    assert back.snapshot() == cs.snapshot()


def _chain(ws: WindowingState, snap: Snapshotter, task: Task) -> tuple[bytes, list[bytes]]:
    """A fresh base of ``ws`` (for a fold): what a compaction would write."""
    fresh = Snapshotter()
    payload, _, _ = fresh.payload(task, 99)
    return payload, []


# -- rescale ------------------------------------------------------------------------------
BY_KEY = Grouping(GroupingKind.FIELDS, ("key",))


def _bolt(par: int, grouping: Grouping = BY_KEY) -> ComponentDef:
    return ComponentDef("windows", ComponentKind.BOLT, "m.W", par, {}, {},
                        (InputDef("src", "default", grouping),))


def _tasks(par: int, events: list[tuple[Any, int]], wm: int) -> list[WindowingState]:
    """``par`` tasks fed as a fields grouping feeds them (each key on its task)."""
    tasks = [_state(COUNTING) for _ in range(par)]
    for ws in tasks:
        _feed(ws, [], wm)
    for key, t in events:
        _feed(tasks[hash_one(key) % par], [(key, t)], wm)
    return tasks


EVENTS = [(f"k{i}", i % 30) for i in range(200)]


def test_entries_split_by_the_routing_hash_and_shared_parts_merge() -> None:
    old = _tasks(2, EVENTS, 0)
    for i, ws in enumerate(old):
        ws.tracker.max_event_ms = {PARTS[0]: 10 + i, PARTS[1]: 20 - i}
        ws.counters["on_time"] = 100 + i
    new, moved = split(_bolt(3), 2, [{"windowing_state": ws, "seen": 7} for ws in old])
    assert moved == len({k for k, _ in EVENTS})
    for task, state in enumerate(new):
        ws = state["windowing_state"]
        assert state["seen"] == 7 and ws.windower is not None
        assert ws.windower.keys and all(hash_one(k) % 3 == task for k in ws.windower.keys.values())
        assert ws.tracker.max_event_ms == {PARTS[0]: 11, PARTS[1]: 20}
        assert ws.counters["on_time"] == (201 if task == 0 else 0)
    keys = Tally(k for s in new for k in s["windowing_state"].windower.keys.values())
    assert keys == Tally({k for k, _ in EVENTS})


def test_merge_rule_is_max_per_partition_and_counters_on_task_0() -> None:
    a, b = _state(COUNTING), _state(COUNTING)
    a.tracker.max_event_ms, b.tracker.max_event_ms = {PARTS[0]: 5}, {PARTS[0]: 9, PARTS[1]: 1}
    a.tracker.watermark_ms, b.tracker.watermark_ms = 3, 4
    a.processing_ms, b.processing_ms = 100, 90
    shareds = [ws.keyed_parts()[0] for ws in (a, b)]
    first, second = merge_shared(shareds, 0, 2), merge_shared(shareds, 1, 2)
    assert first["tracker"]["max_event_ms"] == {PARTS[0]: 9, PARTS[1]: 1}
    assert first["tracker"]["watermark_ms"] == 4 and first["processing_ms"] == 100
    assert second["tracker"] == first["tracker"] and set(second["counters"].values()) == {0}
    assert merge_shared(shareds[::-1], 0, 2)["tracker"]["max_event_ms"] == \
        first["tracker"]["max_event_ms"]


def test_a_rescaled_bolt_fires_the_panes_of_one_that_was_not() -> None:
    later = [(f"k{i}", 31 + i % 5) for i in range(0, 200, 3)]
    one = _tasks(2, EVENTS, 0)
    for key, t in later:
        _feed(one[hash_one(key) % 2], [(key, t)], 0)
    want = sorted(str(p) for ws in one for p in _feed(ws, [], 10**6))
    two = _tasks(2, EVENTS, 0)
    new = [s["w"] for s in split(_bolt(3), 2, [{"w": ws} for ws in two])[0]]
    for key, t in later:
        _feed(new[hash_one(key) % 3], [(key, t)], 0)
    got = sorted(str(p) for ws in new for p in _feed(ws, [], 10**6))
    assert got == want


def test_a_windowed_bolt_not_grouped_by_fields_is_refused_with_the_fix() -> None:
    old = _tasks(2, EVENTS, 0)
    shuffled = _bolt(3, Grouping(GroupingKind.SHUFFLE))
    with pytest.raises(StateError, match=r"grouped by shuffle.*windowed bolt.*Grouping.fields"):
        split(shuffled, 2, [{"windowing_state": ws} for ws in old])


def test_windowing_state_is_a_keyed_state_object() -> None:
    assert is_keyed(_state(COUNTING)) and not is_keyed(WindowingState) and not is_keyed({})


def test_a_state_pickled_whole_by_format_2_is_read_and_continues_per_key() -> None:
    """Format 2 pickled the object whole (flat ``emitted``, ``previous`` without keys)."""
    ws = _state(COUNTING.with_accumulation(Accumulation.RETRACTING))
    _feed(ws, [("a", 1), ("b", 2)], 0)
    _feed(ws, [], 10)  # ON_TIME panes, not final (lateness 5): kept to retract
    old = ws.snapshot()
    legacy = dict(vars(ws))
    legacy["emitted"] = dict(old["emitted"])
    legacy["previous"] = {}
    for name in ("marked", "held_since"):
        del legacy[name]
    clone = WindowingState.__new__(WindowingState)
    clone.__setstate__(legacy)
    assert clone.snapshot() == old
    base = pickle.dumps({"windowing_state": clone})
    task, snap = Task(clone), Snapshotter(1)
    snap.keyed, snap.names = {"windowing_state": clone}, ("windowing_state",)
    _feed(clone, [("a", 3)], 10)
    delta, _ = _batch(snap, task, 2)
    back = D.fold(pickle.loads(base), [delta])["windowing_state"]
    assert back.snapshot() == clone.snapshot()


@pytest.mark.parametrize("windowing", WINDOWINGS, ids=["count", "sliding", "sessions-retracting"])
def test_a_stale_live_state_takes_the_later_deltas_in_place(windowing: Windowing) -> None:
    """A task's live instance that missed batches (``state/component``: ``catch_up``): the deltas
    applied in place give the live state, which then goes on exactly as the live one."""
    ws = _state(windowing)
    assert ws.windower is not None
    ws.windower.set_timer("a", 33, "t1")
    task, snap = Task(ws), Snapshotter()
    copies: list[WindowingState] = []
    deltas: list[bytes] = []
    for txid, (events, wm) in enumerate(BATCHES, 1):
        _feed(ws, events, wm)
        payload, _kind, _ = snap.payload(task, txid)
        snap.written(task, txid)
        copies.append(pickle.loads(pickle.dumps(ws)))  # a worker's instance as of txid
        deltas.append(payload)
    for held in range(len(BATCHES) - 1):  # an instance as of txid held+1 catches up
        stale = pickle.loads(pickle.dumps(copies[held]))
        for payload in deltas[held + 1:]:  # unpickled afresh, as a catch-up reads them
            kd = _keyed(pickle.loads(payload))  # every batch here touches a key
            stale.keyed_apply(*kd)
        assert stale.snapshot() == ws.snapshot()
        live = pickle.loads(pickle.dumps(ws))
        for state in (stale, live):  # both go on: same panes, timers and state
            state.outs = _feed(state, [("a", 50), ("d", 46), ("e", 47)], 45)
            state.outs += _feed(state, [("a", 52)], 200)
        assert stale.outs == live.outs and stale.snapshot() == live.snapshot()


def test_count_windows_and_held_elements_take_a_delta_in_place() -> None:
    cs = _state(Windowing.tumbling(count=3).with_timestamp_field("t").with_lag(10))
    assert cs.buffer is not None and cs.counter is not None
    task, snap = Task(cs), Snapshotter()
    for i in range(5):
        cs.buffer.hold(f"k{i % 3}", i, (f"k{i % 3}", i))
    _batch(snap, task, 1)
    stale = pickle.loads(pickle.dumps(cs))
    for key, t, item in cs.buffer.release(2):
        cs.counter.add(key, t, item)
    cs.buffer.hold("k9", 9, ("k9", 9))
    payload, kind, _ = snap.payload(task, 2)
    assert kind == "delta"
    stale.keyed_apply(*_keyed(pickle.loads(payload)))
    assert stale.snapshot() == cs.snapshot()
    assert sorted(stale.buffer.release(100)) == sorted(cs.buffer.release(100))


def test_timer_and_deadline_indexes_follow_the_heaps_through_pickle_and_catch_up() -> None:
    """``timers_of`` (timers by key) and the processing-time deadlines heap are derived:
    a processing-time step fires through the heap, not a walk of every window, and both
    indexes come back from a pickle and a delta applied in place."""
    from stormshift.windows import Tumbling
    from stormshift.windows.windower import Windower

    w = Windower(Tumbling(60_000), trigger=Trigger(early_every_ms=1_000))
    for k in range(50):
        w.add(f"k{k}", 1_000, 1, now_ms=100 if k < 5 else 5_000)
    w.set_timer("k1", 30_000, "a")
    w.set_timer("k1", 40_000, "b")
    w.set_timer("k2", 30_000, "")
    assert w.timers_of == {stable_order("k1"): [(30_000, "a"), (40_000, "b")],
                           stable_order("k2"): [(30_000, "")]}
    fired = w.on_processing_time(1_100)  # only the five windows whose deadline came
    assert sorted(p.key for p in fired) == [f"k{k}" for k in range(5)]
    assert len(w._deadlines) == 45
    again = pickle.loads(pickle.dumps(w))
    assert again.timers_of == w.timers_of
    assert sorted(p.key for p in again.on_processing_time(6_000)) == \
        sorted(f"k{k}" for k in range(5, 50))
    out = w.advance(35_000, 7_000)
    assert [o.tag for o in out if not isinstance(o, Pane)] == ["a", ""]
    assert w.timers_of == {stable_order("k1"): [(40_000, "b")]}
