"""The task transaction (``state/task_txn.py``): its pure call building, and its fencing and
idempotence rule on the real Redis server."""

from __future__ import annotations

import json

import pytest
from support.state_fixtures import ON_CLUSTER_TOO, commit

from stormshift.engines.spark.records.batchstats import read_records
from stormshift.errors import FencedError, StateError
from stormshift.state import keys as K
from stormshift.state import opaque_map, transactional_map
from stormshift.state.connection import run_scripts
from stormshift.state.deadletter import DeadLetters, entry, fenced_add_call
from stormshift.state.inspect import map_items
from stormshift.state.sinkstream import read_entries, sink_call
from stormshift.state.snapshots import SnapshotStore
from stormshift.state.task_txn import Status, TaskTxn

pytest_plugins = ["support.state_fixtures"]
HMAC = b"test-key"


def _sink(ns):
    """The test's sink stream: in the namespace's slot (Redis Cluster), dropped with it."""
    return K.ns_key(ns, "test-sink")


def _txn(r, ns, txid, task=0):
    return TaskTxn(r, ns, "bolt", task, txid, SnapshotStore(r, ns, HMAC))


def _fill(txn, letters=("x",), leaves=(("default", ["a", 1]),)):
    """What a member's batch does: map writes, then its close (steps 4-7)."""
    with txn.scope():
        opaque_map("o").increment("a", 2)
        transactional_map("t").put("k", "v")
    txn.snapshot(b"state-at-txid")
    for n, value in enumerate(letters):
        txn.dead_letter("default", [value], "ValueError: bad", "trace", source="spout",
                        tuple_key=f"{txn.txid}:{txn.task}:{n + 1}", reason="raised")
    txn.sink(_sink(txn.namespace), list(leaves))
    txn.counters(b"record")


# -- pure: no Redis -------------------------------------------------------------


def _open_without_redis(txid=3, epoch=7):
    txn = TaskTxn(None, "ns", "bolt", 1, txid, SnapshotStore(None, "ns", HMAC))
    txn.status, txn.epoch = Status.OPEN, epoch  # what begin() sets after taking the epoch
    return txn


def _open_and_calls():
    txn = _open_without_redis()
    _fill(txn)
    return txn.calls()


def test_calls_come_in_step_order_each_fenced_by_epoch_and_txid():
    calls = _open_and_calls()
    assert [name for name, _keys, _args in calls] == [
        "opaque", "transactional", "snapshot_put", "dlq_add_fenced", "sink_put", "stats_put"]
    for name, _keys, args in calls:
        assert args[:3] == [7, 3, "bolt:1"], name  # epoch, txid, task: every call is fenced


def test_map_bytes_counts_the_keyed_map_writes_and_the_commit_sends_them_once():
    txn = _open_without_redis()
    with txn.scope():
        transactional_map("t").put("k", "v" * 100)
    n = txn.map_bytes()  # seals the scope: what the commit will send
    assert n >= 100
    [call] = txn.calls()
    assert call[0] == "transactional"
    assert n == sum(len(a) for a in call[2][4:])  # packed keys and values, no fence header
    assert txn.map_bytes() == n and len(txn.calls()) == 1  # sealed once, not twice


def test_map_bytes_is_zero_without_map_writes():
    txn = _open_without_redis()
    assert txn.map_bytes() == 0


def test_namespace_wide_calls_are_fenced_on_the_epoch_counter_and_commit_record():
    for name, keys, _args in _open_and_calls():
        if name in ("dlq_add_fenced", "sink_put", "stats_put"):
            assert keys[:2] == [K.epochs_key("ns"), K.commit_key("ns")], name
        else:
            assert keys[0].endswith(":fence"), name


def test_sink_call_names_the_marker_of_txid_component_task_and_keeps_emit_order():
    name, keys, args = sink_call("ns", 4, 9, "bolt", 2, "out", [("s1", [1]), ("s2", ["x"])])
    assert name == "sink_put"
    assert keys[2:] == [K.sink_marker_key("ns", 9, "bolt", 2), "out"]
    assert args == [4, 9, "bolt:2", "bolt", 2, "s1", json.dumps([1]), "s2", json.dumps(["x"])]


def test_a_dead_letter_is_keyed_by_its_tuple_id():
    a = entry("bolt", "default", [1], "E", "t", 3, tuple_key="3:0:1")[0]
    b = entry("bolt", "default", [1], "E", "t", 3, tuple_key="3:0:2")[0]
    assert a != b and a == entry("bolt", "default", [1], "E2", "t2", 3, tuple_key="3:0:1")[0]
    call = fenced_add_call("ns", 1, 3, "bolt:0", a, ["f", "v"])
    assert call[1][-1] == K.dlq_txid_key("ns", 3) and call[2] == [1, 3, "bolt:0", a, "f", "v"]


def test_steps_out_of_order_are_refused():
    txn = TaskTxn(None, "ns", "bolt", 0, 1, SnapshotStore(None, "ns", HMAC))
    for step in (txn.scope, txn.restore_point, txn.calls, lambda: txn.snapshot(b"")):
        with pytest.raises(StateError, match="new task transaction"):
            step()
    txn = _open_without_redis()
    txn.scope()
    with pytest.raises(StateError, match="one scope per task transaction"):
        txn.scope()
    txn.abort()
    with pytest.raises(StateError, match="aborted task transaction"):
        txn.commit()


def test_map_writes_wait_for_the_commit():
    txn = _open_without_redis()
    with txn.scope() as scope:
        opaque_map("o").increment("a", 1)
    assert scope.maps["o"].ops  # still buffered: the scope's exit sent nothing (r is None)
    assert [c[0] for c in txn.calls()] == ["opaque"]


# -- on the real Redis server -----------------------------------------------------


def _written(r, ns):
    """Everything a commit of ``_fill`` can leave behind, per kind."""
    snaps = SnapshotStore(r, ns, HMAC)._versions("bolt", 0)
    return {
        "maps": {name: map_items(r, ns, "bolt", name) for name in ("o", "t")},
        "snapshots": snaps,
        "dead_letters": [(d.txid, d.tuple_key, d.values) for d in DeadLetters(r, ns).list()],
        "sink": [(int(f[b"txid"]), json.loads(f[b"values"])) for _id, f in
                 r.xrange(_sink(ns))],
        "counters": read_records(r, ns, 1),
    }


def _assert_one_commit(r, ns):
    got = _written(r, ns)
    assert got["maps"]["o"] == {"a": (2, 1)} and got["maps"]["t"] == {"k": ("v", 1)}
    assert got["snapshots"] == [1]
    assert got["dead_letters"] == [(1, "1:0:1", ["x"])]
    assert got["sink"] == [(1, ["a", 1])]
    assert got["counters"] == [("bolt:0", b"record")]


@ON_CLUSTER_TOO
def test_a_commit_writes_every_step_in_one_round(redis_client, ns):
    txn = _txn(redis_client, ns, 1)
    txn.begin()
    _fill(txn)
    txn.commit()
    assert txn.status is Status.COMMITTED
    _assert_one_commit(redis_client, ns)
    assert [e[1:] for e in read_entries(redis_client, _sink(ns))] == [("bolt", "default", ["a", 1])]
    commit(redis_client, ns, 1)
    later = _txn(redis_client, ns, 2)
    later.begin()
    assert later.restore_point().base == b"state-at-txid"


@ON_CLUSTER_TOO
def test_a_stale_epochs_commit_writes_nothing(redis_client, ns):
    zombie = _txn(redis_client, ns, 1)
    zombie.begin()
    _fill(zombie)
    _txn(redis_client, ns, 1).begin()  # a newer attempt of the task: the zombie is fenced
    with pytest.raises(FencedError, match="component 'bolt' task 0 txid 1 epoch 1: .*stale epoch"):
        zombie.commit()
    assert zombie.status is Status.ABORTED
    assert _written(redis_client, ns) == {"maps": {"o": {}, "t": {}}, "snapshots": [],
                                          "dead_letters": [], "sink": [], "counters": []}


@ON_CLUSTER_TOO
def test_a_txid_at_or_below_the_committed_one_is_refused(redis_client, ns):
    commit(redis_client, ns, 5)
    for txid in (5, 4):
        txn = _txn(redis_client, ns, txid)
        txn.begin()
        _fill(txn)
        with pytest.raises(FencedError, match="at or below the committed txid 5"):
            txn.commit()
    got = _written(redis_client, ns)
    assert got["snapshots"] == [] and got["dead_letters"] == [] and got["sink"] == []
    assert got["maps"] == {"o": {}, "t": {}}


@ON_CLUSTER_TOO
def test_a_replayed_commit_of_the_same_txid_lands_once(redis_client, ns):
    first = _txn(redis_client, ns, 1)
    first.begin()
    _fill(first)
    calls = first.calls()
    run_scripts(redis_client, calls)
    once = _written(redis_client, ns)
    run_scripts(redis_client, calls)  # the same round again (a redo after NOSCRIPT, a retry)
    assert _written(redis_client, ns) == once
    retry = _txn(redis_client, ns, 1)  # a later attempt of the same txid, same batch
    retry.begin()
    _fill(retry)
    retry.commit()
    assert _written(redis_client, ns) == once


@pytest.mark.parametrize("landed", [1, 2, 3, 5])
def test_a_round_cut_short_is_replaced_by_the_successors_commit(redis_client, ns, landed):
    zombie = _txn(redis_client, ns, 1)
    zombie.begin()
    _fill(zombie)
    run_scripts(redis_client, zombie.calls()[:landed])  # the rest of its round never arrived
    successor = _txn(redis_client, ns, 1)
    successor.begin()
    _fill(successor)
    successor.commit()
    _assert_one_commit(redis_client, ns)


def test_a_later_attempt_replaces_the_counters_and_snapshot_of_an_earlier_one(redis_client, ns):
    first = _txn(redis_client, ns, 1)
    first.begin()
    first.snapshot(b"first")
    first.counters(b"first")
    first.commit()
    retry = _txn(redis_client, ns, 1)
    retry.begin()
    retry.snapshot(b"retry")
    retry.counters(b"retry")
    retry.commit()
    commit(redis_client, ns, 1)
    assert read_records(redis_client, ns, 1) == [("bolt:0", b"retry")]
    assert SnapshotStore(redis_client, ns, HMAC).load("bolt", 0, 2).base == b"retry"


def test_an_aborted_transaction_sends_nothing(redis_client, ns):
    txn = _txn(redis_client, ns, 1)
    txn.begin()
    _fill(txn)
    txn.abort()
    assert _written(redis_client, ns)["maps"] == {"o": {}, "t": {}}
    assert redis_client.exists(K.sink_marker_key(ns, 1, "bolt", 0)) == 0
