"""The time of each batch -- watermarks and end of input -- decided in the driver, recorded
with the batch.

Words: a *partition* of a windowed bolt is one upstream task on one input stream,
``(component, stream, task id)``. The bolt's tasks report, per batch, the largest
event time they saw per partition, with their lag and idle timeout
(``task/windowing.py``). ``WindowClock`` keeps one ``WatermarkTracker`` per
windowed bolt (the pure logic of ``stormshift.windows``: per partition max event
time minus lag, the minimum over partitions, a partition idle for
``idle_timeout_ms`` of processing time left out, never decreasing) over every task
and every batch, so all tasks of a bolt share one watermark. Call order, per batch
(``BatchRunner``):

1. ``plan(txid, batch_id, now_ms)`` (step 2): the batch's ``BatchTime``. On first
   planning: processing time ``now_ms``; each bolt's watermark from its tracker as
   of the batch before (so from batches <= N-1 only); ``final`` when Spark's offset
   log says every source of this batch id reached end of input (``fin``, not
   ``capped``): then every watermark is ``END_OF_TIME_MS`` and bolts get
   ``end_of_input()``. Recorded under the txid (``engines/spark/records/watermarks.py``); a re-run
   of the batch reads it back and fires exactly the same panes.
2. ``fold(txid, time, reports)`` (step 4, after the stages, before the commit): the
   trackers as of the batch before, with this batch's watermark and reports
   (partitions seen at the batch's processing time), recorded under the txid.
   Returns the bolts' window counters of the batch.

A partition that never delivered counts as seen when its bolt's tracker was made
(the first batch with a report), so the idle timeout runs from there.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from typing import Any

from stormshift.engines.spark.driver.offset_log import batch_offsets
from stormshift.engines.spark.records import watermarks
from stormshift.engines.spark.task.windowing import BatchTime
from stormshift.errors import StormshiftError
from stormshift.state.client import Redis
from stormshift.topology.graph import TopologyGraph
from stormshift.windows.state import WINDOW_COUNTERS
from stormshift.windows.watermark import WatermarkTracker
from stormshift.windows.window import END_OF_TIME_MS, START_OF_TIME_MS

__all__ = ["WindowClock", "final_batch", "time_bolts"]


def time_bolts(graph: TopologyGraph) -> tuple[list[str], bool]:
    """``(windowed bolts, whether any bolt defines end_of_input)`` from their capabilities."""
    windowed = [c.name for c in graph.bolts if c.capabilities.windowed]
    ends = any(c.capabilities.end_of_input for c in graph.bolts)
    return windowed, ends or bool(windowed)


def final_batch(spark_checkpoint: str, batch_id: int) -> bool:
    """Whether every source of batch ``batch_id`` reached end of input, from Spark's offset
    log (``offset_log.batch_offsets``), which holds the same offsets on every re-run of the
    batch id."""
    offsets = batch_offsets(spark_checkpoint, batch_id)
    if offsets is None:
        path = os.path.join(spark_checkpoint, "offsets", str(batch_id))
        raise StormshiftError(
            f"spark engine: cannot read Spark's offset log {path}; windowed bolts and "
            "bolts with end_of_input() need it to tell the batch at end of input. Fix: keep "
            "--checkpoint on a file system the driver reads as local files")
    return bool(offsets) and all(isinstance(o, dict) and o.get("fin") and not o.get("capped")
                                 for o in offsets)


def _encode(trackers: Mapping[str, WatermarkTracker]) -> str:
    out = {}
    for bolt, t in sorted(trackers.items()):
        expected: list[Any] = t.expected  # (component, stream, task) tuples
        parts = [[*p, t.max_event_ms.get(p), t.last_seen_ms.get(p)] for p in expected]
        out[bolt] = {"lag_ms": t.lag_ms, "idle_timeout_ms": t.idle_timeout_ms, "partitions": parts,
                     "watermark_ms": t.watermark_ms, "ended": t.ended}
    return json.dumps(out, sort_keys=True)


def _decode(raw: bytes | str | None) -> dict[str, WatermarkTracker]:
    trackers: dict[str, WatermarkTracker] = {}
    for bolt, d in (json.loads(raw) if raw else {}).items():
        t = WatermarkTracker(d["lag_ms"], idle_timeout_ms=d["idle_timeout_ms"])
        for comp, stream, task, top, seen in d["partitions"]:
            p = (comp, stream, task)
            t.expected.append(p)
            if top is not None:
                t.max_event_ms[p] = top
            if seen is not None:
                t.last_seen_ms[p] = seen
        t.watermark_ms, t.ended = d["watermark_ms"], d["ended"]
        trackers[bolt] = t
    return trackers


class WindowClock:
    """``plan`` and ``fold`` each batch (module doc). Inactive (``plan`` gives None) for a
    topology with no windowed bolt and no ``end_of_input``."""

    def __init__(self, r: Redis, namespace: str, graph: TopologyGraph, spark_checkpoint: str):
        from stormshift.adapters.context import storm_context
        from stormshift.windows.wiring import expected_partitions

        self.r, self.namespace, self.spark_checkpoint = r, namespace, spark_checkpoint
        windowed, self.active = time_bolts(graph)
        self.expected = {b: expected_partitions(storm_context(graph, b, 0)) for b in windowed}

    def plan(self, txid: int, batch_id: int, now_ms: int) -> BatchTime | None:
        """Step 1 (module doc)."""
        if not self.active:
            return None
        raw = watermarks.recorded_time(self.r, self.namespace, txid)
        if raw is None:
            final = final_batch(self.spark_checkpoint, batch_id)
            trackers = _decode(watermarks.trackers_before(self.r, self.namespace, txid))
            marks = {}
            for bolt in self.expected:
                t = trackers.get(bolt)
                marks[bolt] = END_OF_TIME_MS if final else (
                    START_OF_TIME_MS if t is None else t.advance(now_ms))
            record = json.dumps({"processing_ms": now_ms, "watermarks": marks, "final": final},
                                sort_keys=True)
            raw = watermarks.record_time(self.r, self.namespace, txid, record)
        d = json.loads(raw)
        return BatchTime(int(d["processing_ms"]), d["watermarks"], bool(d["final"]))

    def fold(self, txid: int, time: BatchTime | None,
             reports: Mapping[str, list[dict[str, Any]]]) -> dict[str, dict[str, int]]:
        """Step 2 (module doc): the bolts' window counters of the batch."""
        if time is None or not self.expected:
            return {}
        trackers = _decode(watermarks.trackers_before(self.r, self.namespace, txid))
        now = time.processing_ms
        counters: dict[str, dict[str, int]] = {}
        for bolt in sorted(reports):
            mine = reports[bolt]
            if not mine:
                continue
            first = mine[0]
            t = trackers.get(bolt)
            if t is None:
                t = trackers[bolt] = WatermarkTracker(first["lag_ms"],
                                                      expected=self.expected.get(bolt, ()))
                t.last_seen_ms = dict.fromkeys(t.expected, now)
            t.lag_ms, t.idle_timeout_ms = first["lag_ms"], first["idle_timeout_ms"]
            t.watermark_ms = max(t.watermark_ms, time.watermarks.get(bolt, START_OF_TIME_MS))
            t.ended = t.ended or time.final
            total = counters.setdefault(bolt, dict.fromkeys(WINDOW_COUNTERS, 0))
            for report in mine:
                for comp, stream, task, top in report["seen"]:
                    t.observe((comp, stream, int(task)), int(top), now)
                for name, n in report.get("counters", {}).items():
                    total[name] = total.get(name, 0) + n
        watermarks.record_trackers(self.r, self.namespace, txid, _encode(trackers))
        return counters
