"""Trident semantics of the state maps, on the real Redis server."""

from __future__ import annotations

import pytest
from support.state_fixtures import ON_CLUSTER_TOO, commit, run_task

from stormshift.errors import StateError
from stormshift.state import opaque_map, plain_map, transactional_map
from stormshift.state.inspect import map_items

# The Trident semantics table: (case, txid, increments, opaque result, transactional result).
# Before "next batch" txid 1 is committed. A transactional replay is skipped where the stored
# txid is ours; an opaque replay recomputes from prev (so different tuples are still exact).
TABLE = [
    ("first apply", 1, [("a", 1), ("a", 1), ("b", 1)], {"a": 2, "b": 1}, {"a": 2, "b": 1}),
    ("replay same batch", 1, [("a", 1), ("a", 1), ("b", 1)], {"a": 2, "b": 1}, {"a": 2, "b": 1}),
    ("replay different tuples", 1, [("a", 5)], {"a": 5, "b": 1}, {"a": 2, "b": 1}),
    ("next batch", 2, [("a", 1), ("c", 3)], {"a": 6, "b": 1, "c": 3}, {"a": 3, "b": 1, "c": 3}),
    ("replay next batch", 2, [("a", 1), ("c", 3)], {"a": 6, "b": 1, "c": 3}, {"a": 3, "b": 1, "c": 3}),
    ("replay next, different", 2, [("a", 2), ("c", 10)], {"a": 7, "b": 1, "c": 10}, {"a": 3, "b": 1, "c": 3}),
]

pytest_plugins = ["support.state_fixtures"]


def values(r, namespace, name):
    return {k: v for k, (v, _t) in map_items(r, namespace, "bolt", name).items()}


@ON_CLUSTER_TOO
def test_trident_semantics_table(redis_client, ns):
    opq, trx = opaque_map("o"), transactional_map("t")
    committed = 0
    for case, txid, incs, want_opaque, want_trx in TABLE:
        if txid - 1 > committed:
            commit(redis_client, ns, txid - 1)
            committed = txid - 1

        def body(incs=incs):
            for k, by in incs:
                opq.increment(k, by)
                trx.increment(k, by)

        run_task(redis_client, ns, txid, body)
        assert values(redis_client, ns, "o") == want_opaque, case
        assert values(redis_client, ns, "t") == want_trx, case


@ON_CLUSTER_TOO
def test_replays_of_set_and_update_follow_the_table(redis_client, ns):
    opq, trx = opaque_map("o"), transactional_map("t")

    def body(v):
        def run():
            opq.update("hi", lambda x: max(x, v), 0)
            trx.put("last", v)
        return run

    run_task(redis_client, ns, 1, body(7))
    run_task(redis_client, ns, 1, body(3))  # replay, different tuples: opaque recomputes from prev
    assert values(redis_client, ns, "o") == {"hi": 3}
    assert values(redis_client, ns, "t") == {"last": 7}
    commit(redis_client, ns, 1)
    run_task(redis_client, ns, 2, body(5))
    assert values(redis_client, ns, "o") == {"hi": 5}
    assert values(redis_client, ns, "t") == {"last": 5}


@ON_CLUSTER_TOO
def test_reads_see_own_writes_and_opaque_replay_reads_prev(redis_client, ns):
    opq, trx = opaque_map("o"), transactional_map("t")
    seen = []
    run_task(redis_client, ns, 1, lambda: (opq.increment("k", 10), trx.increment("k", 10)))
    commit(redis_client, ns, 1)

    def body():
        seen.append(("start", opq.get("k"), trx.get("k")))
        opq.increment("k", 1)
        trx.increment("k", 1)
        seen.append(("after", opq.get("k"), trx.get("k")))
        opq.increment("k", 1)
        seen.append(("again", opq.get("k"), opq.get_many(["k", "nope"], default=-1)))

    run_task(redis_client, ns, 2, body)
    assert seen == [("start", 10, 10), ("after", 11, 11), ("again", 12, [12, -1])]
    seen.clear()
    run_task(redis_client, ns, 2, body)  # replay: opaque reads prev (10); transactional already applied
    assert seen == [("start", 10, 11), ("after", 11, 11), ("again", 12, [12, -1])]
    assert values(redis_client, ns, "o") == {"k": 12}
    assert values(redis_client, ns, "t") == {"k": 11}


@ON_CLUSTER_TOO
def test_values_round_trip_through_msgpack_and_floats(redis_client, ns):
    m = opaque_map("v")
    vals = {"s": "héllo", "l": [1, "x", None], "d": {"a": 1}, "f": 0.1, "big": 2**70, "t": True,
            ("k", 1): b"\x00raw"}
    run_task(redis_client, ns, 1, lambda: [m.put(k, v) for k, v in vals.items()])
    run_task(redis_client, ns, 2, lambda: [m.increment("f", 0.2), m.increment("n", 2**52)])
    got = values(redis_client, ns, "v")
    assert got == {**vals, "f": 0.1 + 0.2, "n": 2**52}


def test_increment_of_non_number_is_refused_and_nothing_lands(redis_client, ns):
    m = opaque_map("v")
    run_task(redis_client, ns, 1, lambda: m.put("s", "text"))
    with pytest.raises(StateError, match="non-numeric"):
        run_task(redis_client, ns, 2, lambda: [m.increment("s", 1)])
    with pytest.raises(StateError, match="key 'x'"):
        run_task(redis_client, ns, 2, lambda: m.increment("x", "1"))
    assert values(redis_client, ns, "v") == {"s": "text"}


def test_plain_map_is_at_least_once(redis_client, ns):
    p = plain_map("p")
    run_task(redis_client, ns, 1, lambda: p.increment("a", 1))
    run_task(redis_client, ns, 1, lambda: p.increment("a", 1))
    assert values(redis_client, ns, "p") == {"a": 2}


@ON_CLUSTER_TOO
def test_flush_is_one_round_trip_whatever_the_key_count(redis_client, ns):
    m = opaque_map("o")
    small = run_task(redis_client, ns, 1, lambda: [m.increment(i, 1) for i in range(10)])
    big = run_task(redis_client, ns, 2, lambda: [m.increment(i, 1) for i in range(20000)])
    for scope in (small, big):
        assert scope.stats.flush_round_trips == 1
        assert scope.stats.read_round_trips == 0
    assert big.stats.keys_written == 20000
    assert big.stats.script_calls <= 64 * 2  # one per key group (and chunk), not one per key
    assert sum(v for v, _ in map_items(redis_client, ns, "bolt", "o").values()) == 10 + 20000


def test_map_outside_a_batch_names_the_fix():
    with pytest.raises(StateError, match="stormshift.testing"):
        opaque_map("o").increment("a")


def test_one_map_name_one_kind(redis_client, ns):
    def body():
        opaque_map("x").increment("a")
        transactional_map("x").increment("a")

    with pytest.raises(StateError, match="one kind"):
        run_task(redis_client, ns, 1, body)


@ON_CLUSTER_TOO
def test_failed_batch_writes_nothing(redis_client, ns):
    m = opaque_map("o")

    def body():
        m.increment("a", 1)
        raise RuntimeError("bolt died")

    with pytest.raises(RuntimeError):
        run_task(redis_client, ns, 1, body)
    assert values(redis_client, ns, "o") == {}
