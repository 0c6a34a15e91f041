"""Rescaling a legacy bolt's dict state: the pure split, then plan/apply on real Redis."""

from __future__ import annotations

import pickle
from collections import Counter, defaultdict

import pytest
from support.state_fixtures import commit

from stormshift.adapters.routing import hash_one, stable_hash
from stormshift.errors import StateError
from stormshift.state import keys as K
from stormshift.state.fencing import acquire_epoch
from stormshift.state.final import committed_attributes
from stormshift.state.rescale import ensure_par, split
from stormshift.state.snapshots import SnapshotStore
from stormshift.topology.graph import (
    ComponentDef,
    ComponentKind,
    Grouping,
    GroupingKind,
    InputDef,
)

pytest_plugins = ["support.state_fixtures"]
KEY = b"k" * 32


BY_WORD = Grouping(GroupingKind.FIELDS, ("word",))


def bolt(par, grouping=BY_WORD):
    return ComponentDef("counter", ComponentKind.BOLT, "m.Counter", par, {}, {},
                        (InputDef("words", "default", grouping),))


def cut(states_by_key, par, route=lambda k, par: hash_one(k) % par):
    """Old-task states as a fields-grouped task would hold them."""
    tasks = [{"counts": Counter(), "window": 60} for _ in range(par)]
    for k, v in states_by_key.items():
        tasks[route(k, par)]["counts"][k] = v
    return tasks


WORDS = {f"w{i}": i + 1 for i in range(200)}


def test_dict_state_is_resplit_by_the_routing_hash():
    new, moved = split(bolt(3), 2, cut(WORDS, 2))
    assert moved == len(WORDS)
    for task, state in enumerate(new):
        assert state["window"] == 60  # equal on every old task: copied
        assert type(state["counts"]) is Counter
        assert all(hash_one(k) % 3 == task for k in state["counts"])
    assert sum((s["counts"] for s in new), Counter()) == Counter(WORDS)


def test_multi_field_keys_are_tuples_of_the_grouping_values():
    comp = bolt(2, Grouping(GroupingKind.FIELDS, ("user", "word")))
    old = [{"d": defaultdict(int)} for _ in range(3)]
    keys = [("u1", "a"), ("u2", "b"), ("u3", "c"), ("u1", 7)]
    for k in keys:
        old[stable_hash(list(k)) % 3]["d"][k] += 1
    new, _ = split(comp, 3, old)
    assert all(stable_hash(list(k)) % 2 == t for t, s in enumerate(new) for k in s["d"])
    assert type(new[0]["d"]) is defaultdict and new[0]["d"].default_factory is int


def test_a_key_on_the_wrong_task_is_refused_with_the_fix():
    old = cut(WORDS, 2)
    stray = next(k for k in WORDS if hash_one(k) % 2 == 1)
    old[0]["counts"][stray] = 1  # keyed by something else than the grouping values
    with pytest.raises(StateError, match=r"task 0 holds key .*grouping sends to task 1.*keep "
                                         r"par at 2.*opaque_map.*state reset"):
        split(bolt(3), 2, old)


@pytest.mark.parametrize("why, comp, old", [
    ("differs between the old tasks", bolt(3),
     [{"counts": Counter(a=1), "n": 1}, {"counts": Counter(), "n": 2}]),
    ("grouped by shuffle", bolt(3, Grouping(GroupingKind.SHUFFLE)), cut(WORDS, 2)),
    ("not a tuple of 2", bolt(3, Grouping(GroupingKind.FIELDS, ("a", "b"))),
     [{"counts": {"x": 1}}, {"counts": {}}]),
])
def test_state_that_cannot_be_split_is_refused(why, comp, old):
    with pytest.raises(StateError, match=why):
        split(comp, 2, old)


def test_a_stateless_or_equal_state_bolt_rescales_whatever_its_grouping():
    new, moved = split(bolt(4, Grouping(GroupingKind.SHUFFLE)), 2, [{"n": 5}, {"n": 5}])
    assert moved == 0 and new == [{"n": 5}] * 4


def _save(r, ns, store, task, txid, state):
    store.save("counter", task, txid, acquire_epoch(r, ns, "counter", task), pickle.dumps(state))


def test_ensure_par_rewrites_the_snapshots_at_the_committed_txid(redis_client, ns):
    store = SnapshotStore(redis_client, ns, KEY)
    store.check_par("counter", 2)
    for task, state in enumerate(cut(WORDS, 2)):
        _save(redis_client, ns, store, task, 4, state)
    commit(redis_client, ns, 4)
    assert ensure_par(redis_client, store, bolt(2), pickle.dumps) is None  # same par
    p = ensure_par(redis_client, store, bolt(3), pickle.dumps)
    assert (p.old_par, p.new_par, p.txid, p.keys) == (2, 3, 4, len(WORDS))
    assert store.par_of("counter") == 3
    total = Counter()
    for task in range(3):
        attrs = committed_attributes(redis_client, ns, KEY, "counter", task)
        assert all(hash_one(k) % 3 == task for k in attrs["counts"])
        total += attrs["counts"]
    assert total == Counter(WORDS)
    assert redis_client.hkeys(K.snapshot_key(ns, "counter", 2)) == [b"b:4"]


def test_a_refused_rescale_writes_nothing(redis_client, ns):
    store = SnapshotStore(redis_client, ns, KEY)
    store.check_par("counter", 2)
    _save(redis_client, ns, store, 0, 1, {"n": 1})
    _save(redis_client, ns, store, 1, 1, {"n": 2})
    commit(redis_client, ns, 1)
    before = {t: redis_client.hgetall(K.snapshot_key(ns, "counter", t)) for t in range(2)}
    with pytest.raises(StateError, match="'n' is not a dict"):
        ensure_par(redis_client, store, bolt(3), pickle.dumps)
    assert store.par_of("counter") == 2
    assert {t: redis_client.hgetall(K.snapshot_key(ns, "counter", t)) for t in range(2)} == before


def test_live_instances_are_cached_per_wiring_so_a_rescaled_run_builds_new_ones():
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).parent / "spark_fixtures"))
    import sparktopo

    from stormshift.engines.spark.task.taskstate import config_of
    from stormshift.topology.loader import load_topology

    two, three = (load_topology(t) for t in (sparktopo.Replayable, sparktopo.Replayable3))
    assert config_of(two, two.component("numbers")) != config_of(three, three.component("numbers"))
    assert config_of(two, two.component("sums")) == config_of(
        load_topology(sparktopo.Replayable), two.component("sums"))


def test_a_windowed_bolts_chain_is_resplit_per_key(redis_client, ns):
    """Each old task's base + delta chain (written by its Snapshotter) folds back into
    its windows, re-split by key; the new bases hold every key once, on its task."""
    from stormshift.state.component import Snapshotter
    from stormshift.windows import Count, Windowing
    from stormshift.windows.state import WindowingState

    windowing = Windowing.tumbling(duration_ms=10).with_timestamp_field("t").with_aggregation(
        Count())

    class Task:
        def __init__(self):
            self.windowing_state = WindowingState.build(windowing, [])

    store = SnapshotStore(redis_client, ns, KEY)
    store.check_par("counter", 2)
    tasks = [Task() for _ in range(2)]
    snaps = [Snapshotter() for _ in range(2)]
    for txid, words in ((1, list(WORDS)[:120]), (2, list(WORDS)[100:])):
        for word in words:
            tasks[hash_one(word) % 2].windowing_state.windower.add(word, txid, None, 0)
        for task, (inst, snap) in enumerate(zip(tasks, snaps)):
            payload, kind, prev = snap.payload(inst, txid)
            store.save("counter", task, txid, acquire_epoch(redis_client, ns, "counter", task),
                       payload, kind, prev)
            snap.written(inst, txid)
        commit(redis_client, ns, txid)
    assert any(f.startswith(b"d:") for f in redis_client.hkeys(K.snapshot_key(ns, "counter", 0)))
    p = ensure_par(redis_client, store, bolt(3), pickle.dumps)
    assert p.keys == len(WORDS)
    counts = {}
    for task in range(3):
        ws = committed_attributes(redis_client, ns, KEY, "counter", task)["windowing_state"]
        for kord, states in ws.windower.windows.items():
            word = ws.windower.keys[kord]
            assert hash_one(word) % 3 == task
            counts[word] = sum(s.delta for s in states.values())
    assert counts == {w: 2 if 100 <= i < 120 else 1 for i, w in enumerate(WORDS)}
