"""The planner's pump (``stormshift/engines/spark/source/planner/pump.py``) on a real Redis.

A generic spout's ``WalPlanner`` is driven as Spark's planner process drives it
(``latestOffset``, ``commit`` after the batch, polls when nothing is new) while its
pump thread runs ``next_tuple`` ahead. The oracle is the spout's own emit order
(``pumptopo``: task ``i`` emits ``i * STRIDE + j``); the batches' tuples are read back
from the write-ahead log as an executor reads them.
"""

from __future__ import annotations

import sys
import threading
import time
from pathlib import Path
from typing import Any

import msgpack
import pytest

sys.path.insert(0, str(Path(__file__).parent / "spark_fixtures"))

import pumptopo

from stormshift.engines.spark.records.runrecords import SpoutReportRecord
from stormshift.engines.spark.records.wal import WriteAheadLog
from stormshift.engines.spark.runtime.worker import redis_for
from stormshift.engines.spark.source.options import Opts, source_options
from stormshift.engines.spark.source.planner.planner import make_planner
from stormshift.errors import FencedError
from stormshift.topology.loader import load_topology

pytestmark = [pytest.mark.redis]

SPOUT = "numbers"


def planner_for(redis_url: str, namespace: str, *, batch: int, max_total: int | None = None,
                idle_ms: int = 0, **conf: Any) -> Any:
    """A planner of the ``Pumped`` topology; the pump on (2 batches ahead) unless the
    test sets ``stormshift.spout.lead_batches`` (the engine's default is 0: no pump)."""
    conf.setdefault("stormshift.spout.lead_batches", 2)
    pumptopo.reset()
    graph = load_topology(pumptopo.Pumped, overrides=conf)
    return make_planner(Opts.parse(source_options(
        graph, SPOUT, redis_url=redis_url, namespace=namespace, batch_max=batch, budget_ms=500,
        max_total=max_total, tick_ms=0, idle_ms=idle_ms)))


class Driver:
    """Spark's calls on a planner until the ``fin`` offset; each batch's tuples are read
    from the log before ``commit`` trims it. ``batch_secs``: time a batch 'runs'."""

    def __init__(self, planner: Any, redis_url: str, namespace: str, batch_secs: float = 0.0):
        self.planner, self.batch_secs = planner, batch_secs
        self.wals = [WriteAheadLog(redis_for(redis_url), namespace, SPOUT, i) for i in range(2)]
        self.tuples: list[list[int]] = [[], []]
        self.ahead = 0  # most tuples logged beyond a planned offset, seen when planning

    def run(self, start: dict | None = None, max_calls: int = 20_000) -> dict:
        start = start or self.planner.initial_offset()
        for _ in range(max_calls):
            if start.get("fin"):
                return start
            end = self.planner.latest_offset(start)
            self.ahead = max(self.ahead, sum(self.planner.heads) - sum(end["t"]))
            if end["t"] != start["t"]:
                for i, (s, e) in enumerate(zip(start["t"], end["t"])):
                    self.tuples[i] += [msgpack.unpackb(p)[0] for _, _, p in self.wals[i].read(s, e)]
                time.sleep(self.batch_secs)
                self.planner.commit(end)
            else:
                time.sleep(0.005)
            start = end
        raise AssertionError(f"no fin offset after {max_calls} calls; last {start}")


def emitted(task: int, count: int) -> list[int]:
    return [task * pumptopo.STRIDE + j for j in range(count)]


@pytest.mark.parametrize("lead", [2, 0], ids=["pump", "inline"])
def test_every_tuple_is_planned_once_in_emit_order_to_end_of_input(redis_url, namespace, lead):
    planner = planner_for(redis_url, namespace, batch=64, **{"pump.limit": 1000,
                                                              "stormshift.spout.lead_batches": lead})
    assert (planner.pump is not None) == (lead > 0)
    driver = Driver(planner, redis_url, namespace)
    try:
        end = driver.run()
    finally:
        planner.close()
    assert end["done"] and end["t"] == [1000, 1000]
    assert driver.tuples == [emitted(0, 1000), emitted(1, 1000)]


def test_the_pump_logs_at_most_lead_batches_ahead_of_the_planned_offset(redis_url, namespace):
    planner = planner_for(redis_url, namespace, batch=50, **{"pump.limit": 5000})
    try:
        start = planner.latest_offset(planner.initial_offset())
        seen, deadline = [], time.monotonic() + 1.0
        while time.monotonic() < deadline:
            seen.append([h - p for h, p in zip(planner.heads, planner.planned)])
            time.sleep(0.001)
        assert max(max(s) for s in seen) == 100  # lead_batches 2 x batch_max 50, never more
        assert seen[-1] == [100, 100]  # and the pump filled it
        end = planner.latest_offset(start)  # reads what is logged: a full batch at once
        assert [e - s for e, s in zip(end["t"], start["t"])] == [50, 50]
        time.sleep(0.3)
        assert [h - p for h, p in zip(planner.heads, planner.planned)] == [100, 100]
    finally:
        planner.close()


def test_spout_methods_never_run_at_once(redis_url, namespace):
    planner = planner_for(redis_url, namespace, batch=10, **{"pump.limit": 3000})
    try:
        Driver(planner, redis_url, namespace).run()
    finally:
        planner.close()
    calls = pumptopo.CALLS
    assert calls["acked"] == 6000
    # next_tuple ran in the pump thread, ack in the planner's: concurrency was possible ...
    assert calls["threads"]["next_tuple"] == {planner.pump._thread.ident}
    assert calls["threads"]["ack"] == {threading.get_ident()}
    assert "deactivate" in calls["threads"]
    assert calls["max_inside"] == 1  # ... and never happened


def test_a_spout_raising_in_the_pump_thread_reaches_the_report(redis_url, namespace):
    planner = planner_for(redis_url, namespace, batch=32, **{"pump.limit": 200, "pump.raise_every": 10})
    driver = Driver(planner, redis_url, namespace)
    try:
        driver.run()
    finally:
        planner.close()
    assert driver.tuples == [emitted(0, 200), emitted(1, 200)]  # Storm keeps calling next_tuple
    raised = sum(h.instance.calls // 10 for h in planner.hosts)
    errors = SpoutReportRecord(redis_for(redis_url), namespace, SPOUT).errors()
    counts = {k: int(v) for k, v in errors.items() if not k.startswith("trace:")}
    assert raised >= 40 and sum(counts.values()) == raised
    assert all("ValueError" in k and "bad record at call" in k for k in counts)


def test_max_tuples_cut_is_exact_with_the_pump_running_ahead(redis_url, namespace):
    planner = planner_for(redis_url, namespace, batch=20, max_total=123, **{"pump.limit": 1000})
    driver = Driver(planner, redis_url, namespace, batch_secs=0.02)
    try:
        end = driver.run()
    finally:
        planner.close()
    assert end["capped"] and sum(end["n"]) == 123
    assert driver.tuples == [emitted(0, 62), emitted(1, 61)]  # even shares, first tasks first
    assert driver.ahead > 0  # the pump had logged past what the batch took
    assert all(h <= 123 for h in planner.heads)  # and never past the run's budget per task


def test_end_of_input_by_idle_timeout_with_the_pump(redis_url, namespace):
    planner = planner_for(redis_url, namespace, batch=16, idle_ms=300,
                          **{"pump.limit": 40, "pump.endless": True})
    driver = Driver(planner, redis_url, namespace)
    try:
        end = driver.run()
    finally:
        planner.close()
    assert end["done"] and driver.tuples == [emitted(0, 40), emitted(1, 40)]
    warnings = SpoutReportRecord(redis_for(redis_url), namespace, SPOUT).warnings()
    assert len(warnings) == 2 and all("never signalled end of input" in w for w in warnings)


def test_a_fenced_pump_fails_the_planner_call(redis_url, namespace):
    old = planner_for(redis_url, namespace, batch=20, **{"pump.limit": 100_000})
    start = old.latest_offset(old.initial_offset())
    new = planner_for(redis_url, namespace, batch=20, **{"pump.limit": 100_000})  # newer epoch
    try:
        with pytest.raises(FencedError):
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline:
                start = old.latest_offset(start)  # room for the old pump: it appends, fenced
                time.sleep(0.01)
    finally:
        old.close()
        new.close()


def test_a_restarted_spout_replaying_under_the_pump_logs_nothing_twice(redis_url, namespace):
    planner = planner_for(redis_url, namespace, batch=50, **{"pump.limit": 120})
    driver = Driver(planner, redis_url, namespace)
    try:
        end = driver.run()
        heads = list(planner.heads)
        with planner.lock.planner():
            planner._restart(0)  # a fresh instance re-emits tuples 0..119 with their msg ids
        planner.pump.wake()
        deadline = time.monotonic() + 10
        while planner.dropped_replays < 120 and time.monotonic() < deadline:
            time.sleep(0.01)
    finally:
        planner.close()
    assert end["t"] == [120, 120] and driver.tuples == [emitted(0, 120), emitted(1, 120)]
    assert planner.dropped_replays == 120 and planner.heads == heads
