"""Tick tuples, decided when a batch is planned and recorded with it.

Storm sends a bolt a tick every ``topology.tick.tuple.freq.secs`` seconds
(component config over topology config); pystorm's TicklessBatchingBolt
flushes every ``secs_between_batches``. Here the driver decides, before a
batch runs, which bolts get a tick in it (pure: ``plan_ticks``), and records
the decision under the batch's txid so a re-run of the batch delivers the
same ticks. A tick is delivered after the task's tuples of the batch.

After end of input the sources plan ``drain_ticks`` more batches, one per tick
interval of their own clock, so that ticking bolts flush what they hold
(``source/planner/offsets.py`` ``after_done``). Those drain steps tick by their number,
not by the driver's clock (``plan_drain_ticks``): the two clocks disagree by
up to a batch, and a step the driver's clock found too early delivered no
tick, so a BatchingBolt could reach the end of the run still holding tuples.
"""

from __future__ import annotations

import json
from collections.abc import Mapping

from stormshift.engines.spark.records.runrecords import record_ticks, recorded_ticks
from stormshift.state.client import Redis
from stormshift.topology.graph import TopologyGraph

__all__ = ["TickRecorder", "drain_ticks", "plan_drain_ticks", "plan_ticks", "tick_intervals_ms"]

def tick_intervals_ms(graph: TopologyGraph) -> dict[str, int]:
    """Bolt -> tick interval in ms, for bolts that get ticks (``Capabilities.tick_interval_ms``:
    the configured frequency, else a TicklessBatchingBolt's ``secs_between_batches``)."""
    out: dict[str, int] = {}
    for comp in graph.bolts:
        every = comp.capabilities.tick_interval_ms
        if every is not None:
            out[comp.name] = every
    return out


def drain_ticks(graph: TopologyGraph, intervals_ms: Mapping[str, int]) -> int:
    """Tick intervals (of the shortest one) the query runs after end of input: enough for
    every ticking bolt to flush what it holds, and no more (each is an empty batch).

    A BatchingBolt flushes on its ``ticks_between_batches + 1``-th tick, other ticking
    bolts need one (``Capabilities.ticks_to_flush``); a bolt ticking every k shortest
    intervals needs k times as many; a ticking bolt downstream of another needs its own
    after its upstream's (path sums).
    """
    if not intervals_ms:
        return 0
    shortest = min(intervals_ms.values())
    need: dict[str, int] = {}
    for comp in graph.bolts:  # topological order: upstream bolts first
        own = 0
        if comp.name in intervals_ms:
            own = comp.capabilities.ticks_to_flush * -(-intervals_ms[comp.name] // shortest)
        upstream = [need.get(i.source, 0) for i in comp.inputs]
        need[comp.name] = own + max(upstream, default=0)
    return max(need.values(), default=0)


def plan_ticks(intervals_ms: Mapping[str, int], last_ms: Mapping[str, int],
               now_ms: int) -> tuple[frozenset[str], dict[str, int]]:
    """Bolts due for a tick at ``now_ms`` and the updated last-tick times.

    A bolt never ticked before starts its clock now (first tick one interval later).
    """
    due = set()
    new_last = dict(last_ms)
    for name, every in sorted(intervals_ms.items()):
        last = new_last.setdefault(name, now_ms)
        if now_ms - last >= every:
            due.add(name)
            new_last[name] = now_ms
    return frozenset(due), new_last


def plan_drain_ticks(intervals_ms: Mapping[str, int], last_ms: Mapping[str, int], now_ms: int,
                     step: int) -> tuple[frozenset[str], dict[str, int]]:
    """Bolts ticked in drain step ``step`` (1, 2, ...): a bolt ticking every k shortest
    intervals on every k-th step, as ``drain_ticks`` counts them."""
    shortest = min(intervals_ms.values())
    due = frozenset(name for name, every in intervals_ms.items()
                    if step % -(-every // shortest) == 0)
    new_last = dict(last_ms)
    for name in sorted(intervals_ms):
        if name in due or name not in new_last:
            new_last[name] = now_ms
    return due, new_last


class TickRecorder:
    """Ticks of each txid, kept in Redis so a replayed batch sees the same ones."""

    def __init__(self, r: Redis, namespace: str, intervals_ms: Mapping[str, int],
                 spark_checkpoint: str | None = None):
        self.r = r
        self.namespace = namespace
        self.intervals_ms = dict(intervals_ms)
        self.spark_checkpoint = spark_checkpoint  # its offset log tells the drain steps
        self.last_ms: dict[str, int] = {}

    def ticks_for(self, txid: int, now_ms: int, batch_id: int | None = None) -> frozenset[str]:
        if not self.intervals_ms:
            return frozenset()
        recorded = recorded_ticks(self.r, self.namespace, txid)
        if recorded is not None:
            data = json.loads(recorded)
            self.last_ms = data["last"]
            return frozenset(data["ticks"])
        step = None
        if self.spark_checkpoint is not None and batch_id is not None:
            from stormshift.engines.spark.driver.offset_log import drain_step

            step = drain_step(self.spark_checkpoint, batch_id)
        if step is None:
            due, self.last_ms = plan_ticks(self.intervals_ms, self.last_ms, now_ms)
        else:
            due, self.last_ms = plan_drain_ticks(self.intervals_ms, self.last_ms, now_ms, step)
        record_ticks(self.r, self.namespace, txid,
                     json.dumps({"ticks": sorted(due), "last": self.last_ms}))
        return due
