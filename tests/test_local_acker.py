"""The pure parts of the local engine: acker, tracker, timers, fault plan, summary."""

from __future__ import annotations

import pytest

from stormshift.engines.local.acker import Acker
from stormshift.engines.local.faults import Action, CrashTask, FailTuples, FaultPlan
from stormshift.engines.local.scheduler import Periodic, SimClock
from stormshift.engines.local.tracker import TupleTracker, child_lineage, spout_lineage
from stormshift.engines.summary import ComponentStats, RunSummary


def _spout_emit(
    tracker: TupleTracker, acker: Acker, n_targets: int, now_ms: int = 0
) -> tuple[int, list[str]]:
    """What the engine does for a reliable spout emit: one edge per target task."""
    root = tracker.new_id()
    xor, ids = 0, []
    for i in range(n_targets):
        edge = tracker.new_id()
        xor ^= edge
        tid = tracker.new_tuple_id()
        tracker.register(tid, {root: edge}, None, ("bolt", i))
        ids.append(tid)
    acker.init(root, "spout", 0, f"msg-{root}", xor, now_ms)
    return root, ids


def _emit_child(tracker: TupleTracker, parent: str) -> str:
    tid = tracker.new_tuple_id()
    tracker.register(tid, tracker.anchor([parent]), None, ("child", 0))
    return tid


def _ack(tracker: TupleTracker, acker: Acker, tid: str):
    done = None
    for root, xor in tracker.ack(tid):
        done = acker.ack(root, xor) or done
    return done


def test_tree_completes_only_when_every_tuple_is_acked() -> None:
    tracker, acker = TupleTracker(seed=1), Acker(timeout_ms=30_000)
    _root, (a, b) = _spout_emit(tracker, acker, 2)
    child = _emit_child(tracker, a)
    grandchild = _emit_child(tracker, child)
    assert _ack(tracker, acker, a) is None
    assert _ack(tracker, acker, b) is None
    assert _ack(tracker, acker, grandchild) is None
    assert acker.pending("spout", 0) == 1
    done = _ack(tracker, acker, child)
    assert done is not None and done.msg_id.startswith("msg-")
    assert len(acker) == 0 and acker.pending("spout", 0) == 0


def test_ack_order_does_not_matter_and_late_acks_are_ignored() -> None:
    tracker, acker = TupleTracker(seed=2), Acker(timeout_ms=30_000)
    _root, (a,) = _spout_emit(tracker, acker, 1)
    c1, c2 = _emit_child(tracker, a), _emit_child(tracker, a)
    assert _ack(tracker, acker, c2) is None
    assert _ack(tracker, acker, c1) is None
    assert _ack(tracker, acker, a) is not None
    assert _ack(tracker, acker, a) is None  # acked twice: unknown now, ignored


def test_fail_anywhere_fails_the_tree_once() -> None:
    tracker, acker = TupleTracker(seed=3), Acker(timeout_ms=30_000)
    root, (a,) = _spout_emit(tracker, acker, 1)
    child = _emit_child(tracker, a)
    assert _ack(tracker, acker, a) is None
    (failed_root,) = tracker.fail(child)
    assert failed_root == root
    assert acker.fail(root) is not None
    assert acker.fail(root) is None
    assert len(acker) == 0


def test_spout_tuple_without_targets_completes_at_once() -> None:
    acker = Acker(timeout_ms=1000)
    assert acker.init(7, "spout", 0, "m", 0, now_ms=0) is not None
    assert len(acker) == 0


def test_timeout_after_exactly_message_timeout() -> None:
    tracker, acker = TupleTracker(seed=4), Acker(timeout_ms=1000)
    _spout_emit(tracker, acker, 1, now_ms=0)
    _spout_emit(tracker, acker, 1, now_ms=500)
    assert acker.next_expiry_ms() == 1000
    assert acker.expire(999) == []
    assert [t.started_ms for t in acker.expire(1000)] == [0]
    assert [t.started_ms for t in acker.expire(1500)] == [500]
    assert Acker(timeout_ms=None).expire(10**9) == []


def test_unanchored_emits_are_not_tracked() -> None:
    tracker = TupleTracker(seed=5)
    assert tracker.anchor([]) == {}
    assert tracker.anchor(["not-a-tuple"]) == {}
    tracker.register("t", {}, None, ("b", 0))
    assert tracker.get("t") is None and tracker.ack("t") == []


def test_crashed_task_tuples_are_dropped_and_their_tree_times_out() -> None:
    tracker, acker = TupleTracker(seed=6), Acker(timeout_ms=100)
    _root, (a, b) = _spout_emit(tracker, acker, 2)
    assert tracker.drop_task("bolt", 1) == 1
    assert _ack(tracker, acker, a) is None
    assert _ack(tracker, acker, b) is None  # lost with the task
    assert len(acker.expire(100)) == 1


def test_ids_are_deterministic_per_seed() -> None:
    assert [TupleTracker(9).new_id() for _ in range(1)] == [TupleTracker(9).new_id()]
    assert TupleTracker(9).new_id() != TupleTracker(10).new_id()
    assert spout_lineage("s", "default", 3) == spout_lineage("s", "default", 3)
    assert child_lineage([1, 2], "b", 0, "c", 0) == child_lineage([2, 1], "b", 0, "c", 0)
    assert child_lineage([1], "b", 0, "c", 0) != child_lineage([1], "b", 1, "c", 0)


def test_max_spout_pending_counts_per_task() -> None:
    acker = Acker(timeout_ms=None)
    acker.init(1, "s", 0, "a", 5, 0)
    acker.init(2, "s", 1, "b", 5, 0)
    acker.init(3, "s", 1, "c", 5, 0)
    assert (acker.pending("s", 0), acker.pending("s", 1)) == (1, 2)
    assert [t.root for t in acker.forget_task("s", 1)] == [2, 3]
    assert acker.pending("s", 1) == 0 and len(acker) == 1


def test_periodic_fires_in_order_without_catch_up_bursts() -> None:
    timers = Periodic()
    timers.add("a", 1000, now_ms=0)
    timers.add("b", 500, now_ms=0)
    assert timers.next_ms() == 500
    assert timers.due(499) == []
    assert timers.due(1000) == ["a", "b"]
    assert timers.due(5000) == ["a", "b"]
    assert timers.next_ms() == 5500


def test_sim_clock_counts_rounds_and_jumps_waits() -> None:
    clock = SimClock(ms_per_round=2)
    clock.round_done()
    clock.wait_ms(100)
    assert clock.now_ms() == 102


def test_fault_plan_by_index_predicate_and_crash() -> None:
    plan = FaultPlan.of(
        [
            FailTuples("count", indexes={2}),
            FailTuples("split", predicate=lambda t: t == "boom", times=1, before=True),
            CrashTask("count", task_index=1, at_tuple=2),
        ]
    )
    run = plan.start()
    assert run.on_deliver("count", 0, "x") is Action.NONE
    assert run.on_deliver("count", 1, "x") is Action.FAIL_AFTER  # 2nd tuple of count
    assert run.on_deliver("count", 1, "x") is Action.CRASH  # 2nd tuple of task 1
    assert run.on_deliver("split", 0, "boom") is Action.FAIL_BEFORE
    assert run.on_deliver("split", 0, "boom") is Action.NONE  # times=1
    assert len(run.injected) == 3
    with pytest.raises(ValueError, match="selects nothing"):
        FailTuples("count")


def test_summary_table_dict_and_latest() -> None:
    summary = RunSummary("wc", "local", {"count": ComponentStats("count", "bolt", 2, tuples_in=3)})
    summary.outputs[("count", "default")] = [["a", 1], ["b", 1], ["a", 2]]
    assert summary.latest("count") == {"a": ["a", 2], "b": ["b", 1]}
    assert summary.to_dict()["components"]["count"]["tuples_in"] == 3
    assert summary.total("tuples_in") == 3
    assert summary.table().row_count == 1
    with pytest.raises(KeyError, match="components are"):
        summary["nope"]
