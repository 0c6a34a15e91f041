"""Zombie fencing, concurrent attempts and the commit record, on the real Redis server."""

from __future__ import annotations

import threading

import pytest
from support.state_fixtures import ON_CLUSTER_TOO, commit, run_task

from stormshift.errors import FencedError, StateError
from stormshift.state import opaque_map, transactional_map
from stormshift.state.commit import CommitLog
from stormshift.state.fencing import FencedWriter, acquire_epoch, current_epoch
from stormshift.state.inspect import map_items
from stormshift.state.scope import TaskScope

BATCH = [("a", 1), ("b", 2), ("a", 3)]

pytest_plugins = ["support.state_fixtures"]


def apply(batch):
    opq, trx = opaque_map("o"), transactional_map("t")
    for k, by in batch:
        opq.increment(k, by)
        trx.increment(k, by)


def totals(r, namespace):
    return [
        {k: v for k, (v, _t) in map_items(r, namespace, "bolt", name).items()} for name in ("o", "t")
    ]


def test_epochs_grow_per_task_and_never_reset(redis_client, ns):
    assert [acquire_epoch(redis_client, ns, "bolt", 0) for _ in range(3)] == [1, 2, 3]
    assert acquire_epoch(redis_client, ns, "bolt", 1) == 1
    CommitLog(redis_client, ns).bind_checkpoint("ck-a")
    CommitLog(redis_client, ns).bind_checkpoint("ck-b", mode="reset")
    assert current_epoch(redis_client, ns, "bolt", 0) == 3
    assert redis_client.ttl(f"ss:{{{ns}}}:epochs") == -1  # no expiry


@ON_CLUSTER_TOO
def test_zombie_writing_after_successor_committed_is_rejected(redis_client, ns):
    zombie_epoch = acquire_epoch(redis_client, ns, "bolt", 0)
    zombie = TaskScope(redis_client, ns, "bolt", 0, 1, zombie_epoch)
    with pytest.raises(FencedError, match="stale epoch"), zombie:
        apply(BATCH)  # buffered while the successor takes over
        run_task(redis_client, ns, 1, lambda: apply(BATCH))  # successor: new epoch, same batch
        commit(redis_client, ns, 1)
    assert totals(redis_client, ns) == [{"a": 4, "b": 2}, {"a": 4, "b": 2}]


def test_zombie_before_commit_is_rejected_by_epoch(redis_client, ns):
    old = acquire_epoch(redis_client, ns, "bolt", 0)
    run_task(redis_client, ns, 1, lambda: apply(BATCH))
    with pytest.raises(FencedError, match="stale epoch"):
        run_task(redis_client, ns, 1, lambda: apply([("a", 100)]), epoch=old)
    assert totals(redis_client, ns) == [{"a": 4, "b": 2}, {"a": 4, "b": 2}]


@ON_CLUSTER_TOO
def test_write_at_or_below_committed_txid_is_rejected_even_with_fresh_epoch(redis_client, ns):
    run_task(redis_client, ns, 1, lambda: apply(BATCH))
    commit(redis_client, ns, 1)
    for txid in (0, 1):
        with pytest.raises(FencedError, match="at or below the committed"):
            run_task(redis_client, ns, txid, lambda: apply([("a", 100)]))
    assert totals(redis_client, ns) == [{"a": 4, "b": 2}, {"a": 4, "b": 2}]


@ON_CLUSTER_TOO
def test_two_concurrent_attempts_of_one_batch_newer_wins_totals_exact(redis_client, ns):
    for txid in range(1, 6):
        epochs = [acquire_epoch(redis_client, ns, "bolt", 0) for _ in range(2)]
        ready = threading.Barrier(2)
        outcome: dict[int, str] = {}

        def attempt(epoch, txid=txid, ready=ready, outcome=outcome):
            try:
                with TaskScope(redis_client, ns, "bolt", 0, txid, epoch):
                    apply(BATCH)
                    ready.wait()
                outcome[epoch] = "ok"
            except FencedError:
                outcome[epoch] = "fenced"

        threads = [threading.Thread(target=attempt, args=(e,)) for e in epochs]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert outcome == {epochs[0]: "fenced", epochs[1]: "ok"}
        commit(redis_client, ns, txid)
    assert totals(redis_client, ns) == [{"a": 20, "b": 10}, {"a": 20, "b": 10}]


def test_two_racing_attempts_without_ordering_keep_totals_exact(redis_client, ns):
    for txid in range(1, 11):
        results = []

        def attempt(txid=txid, results=results):
            try:
                run_task(redis_client, ns, txid, lambda: apply(BATCH))
                results.append("ok")
            except FencedError:
                results.append("fenced")

        threads = [threading.Thread(target=attempt) for _ in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert "ok" in results
        commit(redis_client, ns, txid)
    assert totals(redis_client, ns) == [{"a": 40, "b": 20}, {"a": 40, "b": 20}]


@ON_CLUSTER_TOO
def test_checkpoint_binding_keeps_txids_growing(redis_client, ns):
    log = CommitLog(redis_client, ns)
    assert log.committed() == -1
    assert log.bind_checkpoint("ck-1") == 0
    assert log.bind_checkpoint("ck-1") == 0
    run_task(redis_client, ns, 4, lambda: apply(BATCH))
    log.record_commit(4)
    log.record_commit(4)  # idempotent
    with pytest.raises(FencedError, match="below committed"):
        log.record_commit(3)
    with pytest.raises(StateError, match="--adopt-state") as err:
        log.bind_checkpoint("ck-2")
    assert "--reset-state" in str(err.value)
    assert log.bind_checkpoint("ck-2", mode="adopt") == 5
    assert log.bind_checkpoint("ck-2") == 5  # now known
    assert totals(redis_client, ns)[0] == {"a": 4, "b": 2}
    assert log.bind_checkpoint("ck-3", mode="reset") == 5
    assert totals(redis_client, ns) == [{}, {}]
    assert log.committed() == 4  # txids never go backwards, even after a reset
    with pytest.raises(FencedError):
        run_task(redis_client, ns, 4, lambda: apply(BATCH))


def test_fenced_writer_for_task_owned_keys(redis_client, ns):
    epoch = acquire_epoch(redis_client, ns, "spout", 0)
    w = FencedWriter(redis_client, ns, "spout", 0, txid=1, epoch=epoch)
    wal = w.key("wal")
    w.call("XADD", wal, "*", "chunk", b"abc")
    w.call_many([("XADD", wal, ("*", "chunk", b"def")), ("XTRIM", wal, ("MAXLEN", "1"))])
    assert redis_client.xlen(wal) == 1
    acquire_epoch(redis_client, ns, "spout", 0)
    with pytest.raises(FencedError, match="stale epoch"):
        w.call("XTRIM", wal, "MAXLEN", "0")
    assert redis_client.xlen(wal) == 1
    with pytest.raises(ValueError, match="not owned"):
        w.call("SET", "elsewhere", "x")
    with pytest.raises(ValueError, match="not allowed"):
        w.call("FLUSHALL", wal)
