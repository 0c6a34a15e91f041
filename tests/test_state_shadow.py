"""Small plain dicts of scalars stay plain dicts: their keys come from a per-batch diff.

A legacy bolt's small ``dict`` of plain scalar values is not swapped for a tracked
subclass (``state/tracked.py``): the snapshotter keeps a copy as of the version and
``shadow_delta`` compares. These check that a delta so found folds back to the live dict
(values and key order) for random sequences of writes, deletes and re-inserts, that it
gives what a tracked dict of the same writes gives, and, on the real Redis server, that
a task switching workers (catch-up), restarting (restore) or outgrowing the diff (a
dict tracked from the next version on) keeps the state a run that never switched has.
"""

from __future__ import annotations

import random
from typing import Any

import pytest
from support.task_batches import bound_to, switching_batches

from stormshift.state.component import build, snapshotter
from stormshift.state.component.deltas import _apply_keys, attr_delta
from stormshift.state.component.snapshotter import shadow_delta
from stormshift.state.snapshots import SnapshotStore
from stormshift.state.tracked import is_tracked, track

KEY = b"test-hmac-key"
pytest_plugins = ["support.state_fixtures"]


def _ops(d: dict[Any, Any], rng: random.Random, n: int) -> None:
    """Random writes a bolt makes: updates, inserts, deletes, pops, re-inserts, clears."""
    for _ in range(n):
        r = rng.random()
        k = f"k{rng.randrange(40)}"
        if r < 0.5:
            v = d.get(k, 0)
            d[k] = (v if type(v) in (int, float) else 0) + rng.choice([1, 1.5, 0])
        elif r < 0.6 and d:
            del d[rng.choice(sorted(d))]
        elif r < 0.7 and k in d:
            d[k] = d.pop(k)  # moved to the end
        elif r < 0.72:
            d.clear()
        elif r < 0.8:
            d[k] = rng.choice(["s", None, True, b"b", 7])
        else:
            d.setdefault(k, 3)


@pytest.mark.parametrize("seed", range(200))
def test_a_diff_folds_back_to_the_live_dict_as_tracking_does(seed):
    rng = random.Random(seed)
    start: dict[Any, Any] = {}
    _ops(start, rng, rng.randrange(0, 30))
    live = dict(start)
    tracked = track(dict(start))
    n = rng.randrange(0, 12)
    _ops(live, random.Random(seed + 1000), n)
    _ops(tracked, random.Random(seed + 1000), n)
    assert list(live.items()) == list(tracked.items())
    try:
        kd = shadow_delta(start, live)
    except LookupError:  # a key moved: written whole, as a reordered tracked dict is
        assert list(live) != [k for k in start if k in live] + [k for k in live if k not in start]
        return
    back = dict(start)
    if kd is not None:
        _apply_keys(back, kd)
    assert list(back.items()) == list(live.items())
    try:
        tkd = attr_delta(tracked)
    except LookupError:
        return
    via_tracked = dict(start)
    if tkd is not None:
        _apply_keys(via_tracked, tkd)
    assert list(via_tracked.items()) == list(back.items())


def test_nothing_changed_is_no_delta_and_a_rebound_value_is_one():
    old = {"a": 1, "b": 2.5, "c": "x"}
    assert shadow_delta(old, dict(old)) is None
    new = dict(old)
    new["b"] = float("2.5")  # equal, but rebound: written, as a tracked write is
    new["d"] = None
    del new["a"]
    assert shadow_delta(old, new) == (["a"], ["d"], {"d": None, "b": 2.5})


class Bolt:
    """A legacy bolt whose state is small plain dicts (the adclicks bolts' shape)."""

    def initialize(self) -> None:
        self.spend: dict[str, int] = {}
        self.clicks = {f"seed{i}": i for i in range(20)}
        self.seen = 0

    def process(self, rng: random.Random, txid: int) -> None:
        for _ in range(rng.randrange(0, 30)):
            ad = f"ad{rng.randrange(50)}"
            self.spend[ad] = self.spend.get(ad, 0) + rng.randrange(100)
            self.seen += 1
        _ops(self.clicks, rng, rng.randrange(0, 8))
        if txid % 9 == 4:
            self.clicks["nested"] = [txid]  # not a scalar: tracked from the next version
        if txid % 9 == 6 and isinstance(self.clicks.get("nested"), list):
            self.clicks["nested"].append(txid)  # changed in place, after the swap
        if txid % 11 == 0:
            self.clicks = {"fresh": txid}  # replaced: a small plain dict again


BOUND = bound_to(Bolt)


@pytest.mark.parametrize("seed", range(3))
def test_plain_dicts_switching_workers_keep_the_state_of_a_run_that_never_switched(
        redis_client, ns, seed, monkeypatch):
    monkeypatch.setattr(snapshotter, "SHADOW_MAX", 45)  # spend outgrows it: tracked then
    store = SnapshotStore(redis_client, ns, KEY)
    hows: list[str] = []
    plain = tracked = 0
    for host, how in switching_batches(redis_client, ns, store, BOUND, seed, 30):
        hows.append(how)
        spend = host.instance.spend
        plain += type(spend) is dict
        tracked += is_tracked(spend)
        assert ("spend" in host.instance._stormshift_snap.shadow) == (type(spend) is dict)
    assert hows.count("caught_up") >= 3 and "reused" in hows
    assert plain and tracked  # both ways ran


class Plain:
    """Attributes as initialize() leaves them (no Redis: the snapshotter alone)."""

    def __init__(self) -> None:
        self.a = {"x": 1}
        self.c = {"z": 1}


def test_a_plain_dict_taking_a_container_or_an_alias_is_followed_whole_or_tracked():
    import pickle

    from stormshift.state.component.deltas import fold

    b = Plain()
    build(b, None)
    snap = b._stormshift_snap
    assert set(snap.shadow) == {"a", "c"} and type(b.a) is dict
    payloads = []

    def land(txid: int) -> None:
        payload, kind, _prev = snap.payload(b, txid)
        if kind == "base":  # the first, or a compaction (this state is tiny)
            payloads.clear()
        payloads.append(pickle.loads(payload))
        snap.written(b, txid)

    land(1)
    b.a["y"] = [1]  # not a scalar: written as a rebound key, then tracked
    b.alias = b.c  # c shared from now on: neither tracked nor diffed (pickled whole)
    b.c["w"] = [0]
    land(2)
    assert is_tracked(b.a) and "a" not in snap.shadow
    assert type(b.c) is dict and "c" not in snap.tracked and b.alias is b.c
    assert len(payloads) == 2  # a delta on the base
    b.a["y"].append(2)  # in place: the tracked dict's inner list
    b.c["w"].append(1)  # in place, shared: the rest's pickle changes, written whole
    land(3)
    back = fold(payloads[0], payloads[1:])
    assert back["a"] == {"x": 1, "y": [1, 2]} and back["c"] == {"z": 1, "w": [0, 1]}
    assert back["alias"] == back["c"]
