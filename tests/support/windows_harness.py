"""Replays window scenarios (``tests/windows_scenarios/*.json``) two ways.

A scenario is data: ``windowing`` (the window and its options), ``steps``
(``{"element": {"key", "t", "v", "p"}}`` -- an input tuple with event time
``t`` ms from partition ``p``; ``{"processing_ms": P}`` -- processing time
moves to ``P`` by ticks of ``tick_ms``; the end of the list is the end of
input) and ``expected``: the outputs in order, each one of

- ``{"pane": "early"|"on_time"|"late", "key", "window": [start, end], "index", "result"}``
- ``{"retract": {"key", "window", "result"}}`` (the pane it replaces)
- ``{"late": {"key", "t", "v"}}`` (a tuple sent to the late-tuple stream)

and ``counters``. ``result`` is the list of ``v`` by event time (aggregation
``collect``) or their sum (``sum``).

``run_pure`` drives ``WatermarkTracker`` + ``Windower`` in the call order of
``WindowedBolt``; ``run_local`` runs a real topology (a spout per partition,
the windowed bolt, a collecting bolt) on the local engine with a SimClock;
``spark_batches`` says where the Spark engine's micro-batches of a scenario
are cut (``test_spark_windows.py`` runs them).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from stormshift.windows import (
    END_OF_TIME_MS,
    Collect,
    Pane,
    Retraction,
    SumField,
    Trigger,
    WatermarkTracker,
    WindowedTuple,
    Windowing,
)

SCENARIOS = Path(__file__).parents[1] / "windows_scenarios"
FIELDS = ("key", "t", "v")


def load(name: str) -> dict[str, Any]:
    return json.loads((SCENARIOS / f"{name}.json").read_text())


def all_names() -> list[str]:
    return sorted(p.stem for p in SCENARIOS.glob("*.json"))


def windowing_of(spec: dict[str, Any]) -> Windowing:
    if "tumbling_ms" in spec:
        w = Windowing.tumbling(duration_ms=spec["tumbling_ms"])
    elif "sliding_ms" in spec:
        w = Windowing.sliding(length_ms=spec["sliding_ms"][0], interval_ms=spec["sliding_ms"][1])
    elif "session_gap_ms" in spec:
        w = Windowing.session(gap_ms=spec["session_gap_ms"])
    elif "tumbling_count" in spec:
        w = Windowing.tumbling(count=spec["tumbling_count"])
    elif "sliding_count" in spec:
        w = Windowing.sliding(length_count=spec["sliding_count"][0],
                              interval_count=spec["sliding_count"][1])
    else:
        w = Windowing.daily(zone=spec["daily_zone"])
    w = w.with_timestamp_field("t").with_lag(spec.get("lag_ms", 0))
    w = w.with_allowed_lateness(spec.get("allowed_lateness_ms", 0))
    if "trigger" in spec:
        w = w.with_trigger(Trigger(**spec["trigger"]))
    w = w.with_accumulation(spec.get("accumulation", "discarding"))
    if spec.get("aggregation") == "sum":
        w = w.with_aggregation(SumField("v"))
    if spec.get("late_stream"):
        w = w.with_late_tuple_stream("late")
    if spec.get("watermark_interval_ms"):
        w = w.with_watermark_interval(spec["watermark_interval_ms"])
    if spec.get("idle_timeout_ms"):
        w = w.with_idle_timeout(spec["idle_timeout_ms"])
    return w.with_key_fields("key")


def result_of(windowing: Windowing, result: Any) -> Any:
    if isinstance(windowing.aggregation, Collect):
        return [t.value("v") for t in result]
    return result


def pane_dict(key: Any, start: int, end: int, timing: str, index: int, result: Any) -> dict:
    return {"pane": timing, "key": key, "window": [start, end], "index": index, "result": result}


# -- the pure logic --------------------------------------------------------------
def run_pure(scenario: dict[str, Any], steps: list[dict[str, Any]] | None = None
             ) -> tuple[list[dict[str, Any]], dict[str, int]]:
    w = windowing_of(scenario["windowing"])
    tick_ms = scenario.get("tick_ms", 1000)
    tracker = WatermarkTracker(w.lag_ms, expected=range(scenario.get("partitions", 1)),
                               idle_timeout_ms=w.idle_timeout_ms)
    windower = w.build_time()
    out: list[dict[str, Any]] = []
    counters = {"on_time": 0, "late_updated": 0, "dropped_late": 0}
    now = 0
    next_wm = w.watermark_interval_ms

    def handle(outputs: list[Any]) -> None:
        for o in outputs:
            if isinstance(o, Retraction):
                out.append({"retract": {"key": o.key, "window": [o.window.start_ms,
                            o.window.end_ms], "result": result_of(w, o.result)}})
            elif isinstance(o, Pane):
                out.append(pane_dict(o.key, o.window.start_ms, o.window.end_ms, o.timing.value,
                                     o.index, result_of(w, o.result)))

    for i, step in enumerate(scenario["steps"] if steps is None else steps):
        if "element" in step:
            e = step["element"]
            item = WindowedTuple(str(i), "src", "default", e.get("p", 0), (e["key"], e["t"],
                                 e["v"]), FIELDS, e["t"])
            tracker.observe(e.get("p", 0), e["t"], now)
            added = windower.add(e["key"], e["t"], item, now)
            counters[{"on_time": "on_time", "late": "late_updated"}.get(
                added.kind, "dropped_late")] += 1
            if added.kind == "dropped" and w.late_tuple_stream:
                out.append({"late": {"key": e["key"], "t": e["t"], "v": e["v"]}})
            handle(added.outputs)
            if next_wm is None:
                handle(windower.advance(tracker.advance(now), now))
        else:
            while now + tick_ms <= step["processing_ms"]:
                now += tick_ms
                handle(windower.on_processing_time(now))
                if next_wm is None:
                    handle(windower.advance(tracker.advance(now), now))
                elif now >= next_wm:
                    while next_wm <= now:
                        next_wm += w.watermark_interval_ms or 0
                    handle(windower.advance(tracker.advance(now), now))
    tracker.end_of_input()
    handle(windower.advance(END_OF_TIME_MS, now))
    return out, counters


# -- the Spark engine's batches ------------------------------------------------------
def spark_batches(scenario: dict[str, Any], steps: list[dict[str, Any]] | None = None
                  ) -> tuple[list[dict[str, Any]], list[int], list[int]]:
    """``(steps, cuts, times)``: a scenario as Spark micro-batches.

    A scenario's watermark advances happen between elements (the local engine
    moves the watermark after every tuple, and on ticks); the Spark engine moves
    it once per batch, at the batch's start, to what the batches before it
    allow. So a scenario maps to batches cut where its watermark advances: a
    batch holds consecutive elements that meet the same watermark (and come from
    the same partition, so the task's per-source order is the scenario's order);
    every tick of a processing-time step is a batch of its own (no element:
    processing triggers, idle timeouts); one empty batch after the last element
    applies the last watermark, as the local engine does after its last tuple;
    then the engine's final batch fires the rest (end of input). ``cuts`` are
    step positions where batches end (in the returned ``steps``, where each
    processing step became one step per tick) and ``times`` each batch's
    processing time, the final batch included.
    """
    w = windowing_of(scenario["windowing"])
    tick_ms = scenario.get("tick_ms", 1000)
    tracker = WatermarkTracker(w.lag_ms, expected=range(scenario.get("partitions", 1)),
                               idle_timeout_ms=w.idle_timeout_ms)
    out: list[dict[str, Any]] = []
    cuts: list[int] = []
    times: list[int] = []
    now = 0
    next_wm = w.watermark_interval_ms
    batch: tuple[int, int] | None = None  # (watermark, partition) of the open batch

    def cut() -> None:
        cuts.append(len(out))
        times.append(now)

    for step in scenario["steps"] if steps is None else steps:
        if "element" in step:
            p = step["element"].get("p", 0)
            if batch is not None and batch != (tracker.watermark_ms, p):
                cut()
            batch = (tracker.watermark_ms, p)
            out.append(step)
            tracker.observe(p, step["element"]["t"], now)
            if next_wm is None:
                tracker.advance(now)
            continue
        if batch is not None:
            cut()
            batch = None
        while now + tick_ms <= step["processing_ms"]:
            now += tick_ms
            out.append({"processing_ms": now})
            cut()
            if next_wm is None:
                tracker.advance(now)
            elif now >= next_wm:
                while next_wm <= now:
                    next_wm += w.watermark_interval_ms or 0
                tracker.advance(now)
    if batch is not None:
        cut()
    out.append({"processing_ms": now})
    cut()
    times.append(now)  # the final batch
    return out, cuts, times
