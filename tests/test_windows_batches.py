"""Windows in batch mode (the Spark engine's way): the watermark comes with the batch.

A windowed bolt hosted as the Spark task hosts it: ``start_batch`` applies the
batch's recorded watermark before its tuples, tuples never move it, and
``batch_report`` hands the driver the largest event time per partition. The
driver's side (``driver/windows.py``): its records round-trip, the final batch
is read from Spark's offset log, and ``WindowClock`` plans each batch from the
batches before it and gives a re-run the recorded plan (real Redis).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from streamparse import Grouping, Topology
from support.windows_fixtures import ClickSpout, ProbeBolt

from stormshift.adapters.host import host_component
from stormshift.engines.spark.driver.windows import (
    WindowClock,
    _decode,
    _encode,
    final_batch,
    time_bolts,
)
from stormshift.errors import StormshiftError
from stormshift.topology.loader import load_topology
from stormshift.windows import END_OF_TIME_MS, START_OF_TIME_MS, WatermarkTracker


def _graph(windowing: str = "sliding_expired") -> Any:
    spout = ClickSpout.spec(name="clicks")
    probe = ProbeBolt.spec(name="probe", inputs={spout: Grouping.fields("advertiser")})
    topo = type("BatchProbe", (Topology,), {"clicks": spout, "probe": probe})
    return load_topology(topo, overrides={"fixture.windowing": windowing,
                                          "fixture.clicks": []})


def _windows(host: Any) -> list[tuple[int, int, str]]:
    emits = host.outbox.drain().emits
    return [(e.values[1], e.values[2], e.values[3]) for e in emits if e.stream == "default"]


def test_batch_mode_fires_on_the_recorded_watermark_only() -> None:
    graph = _graph()
    host = host_component(graph, "probe", 0)
    host.open()
    src = graph.component("clicks").task_id(0)
    host.call_hook("start_batch", 1_000, START_OF_TIME_MS)
    for ts in (1, 5, 12, 25):
        host.execute(host.new_tuple("clicks", "default", src, ["a", ts, ts * 10]))
    assert _windows(host) == []  # tuples do not move the watermark in batch mode
    report = host.instance.batch_report()
    assert report["seen"] == [["clicks", "default", src, 25]] and report["lag_ms"] == 0
    assert host.instance.batch_report()["seen"] == []  # taken
    host.call_hook("start_batch", 2_000, 25)  # the next batch's watermark
    assert _windows(host) == [(-10, 10, "on_time"), (0, 20, "on_time")]
    host.execute(host.new_tuple("clicks", "default", src, ["a", 3, 30]))  # behind 25: dropped
    host.call_hook("process_tick", None)  # ticks do nothing in batch mode
    host.call_hook("start_batch", 3_000, 20)  # a lower watermark never takes it back
    assert _windows(host) == []
    host.call_hook("end_of_input")
    assert _windows(host) == [(10, 30, "on_time"), (20, 40, "on_time")]
    assert host.instance.window_counters() == {"on_time": 4, "late_updated": 0,
                                               "dropped_late": 1, "late_stream": 0}


def test_processing_time_windows_in_batch_mode_use_the_batch_time() -> None:
    """Without a timestamp field a tuple's time is its batch's recorded processing time,
    and that time is the watermark (the driver's watermark is not used)."""
    graph = _graph("processing_time")  # tumbling 2 s of processing time
    host = host_component(graph, "probe", 0)
    host.open()
    src = graph.component("clicks").task_id(0)
    host.call_hook("start_batch", 2_500, END_OF_TIME_MS)
    host.execute(host.new_tuple("clicks", "default", src, ["a", 0, 1]))
    host.call_hook("start_batch", 3_900, END_OF_TIME_MS)
    host.execute(host.new_tuple("clicks", "default", src, ["a", 0, 2]))
    assert _windows(host) == []
    host.call_hook("start_batch", 4_000, START_OF_TIME_MS)
    assert _windows(host) == [(2_000, 4_000, "on_time")]


def test_time_bolts_finds_windowed_bolts() -> None:
    assert time_bolts(_graph()) == (["probe"], True)


def test_tracker_records_round_trip() -> None:
    t = WatermarkTracker(5, expected=[("s", "default", 1), ("s", "default", 2)],
                         idle_timeout_ms=100)
    t.observe(("s", "default", 1), 50, 7)
    t.advance(7)
    back = _decode(_encode({"b": t}))["b"]
    assert back.snapshot() == t.snapshot()
    assert (back.lag_ms, back.idle_timeout_ms) == (5, 100)


def _offsets(folder: Path, batch_id: int, *offsets: dict[str, Any]) -> None:
    (folder / "offsets").mkdir(parents=True, exist_ok=True)
    lines = ["v1", json.dumps({"batchWatermarkMs": 0}), *(json.dumps(o) for o in offsets)]
    (folder / "offsets" / str(batch_id)).write_text("\n".join(lines) + "\n")


def test_final_batch_is_every_source_at_fin_and_not_capped(tmp_path: Path) -> None:
    _offsets(tmp_path, 0, {"fin": False}, {"fin": True})
    _offsets(tmp_path, 1, {"fin": True}, {"fin": True})
    _offsets(tmp_path, 2, {"fin": True, "capped": True})
    assert [final_batch(str(tmp_path), b) for b in range(3)] == [False, True, False]
    with pytest.raises(StormshiftError, match="offset log .* Fix: keep --checkpoint"):
        final_batch(str(tmp_path), 3)


@pytest.mark.redis
def test_window_clock_plans_from_earlier_batches_and_replays_the_record(
        redis_url: str, namespace: str, tmp_path: Path) -> None:
    import redis

    r = redis.Redis.from_url(redis_url)
    clock = WindowClock(r, namespace, _graph(), str(tmp_path))
    src = _graph().component("clicks").task_id(0)
    for batch_id in range(3):
        _offsets(tmp_path, batch_id, {"fin": batch_id == 2})
    first = clock.plan(10, 0, now_ms=1_000)
    assert first is not None and first.watermarks == {"probe": START_OF_TIME_MS}
    report = {"event_time": True, "lag_ms": 2, "idle_timeout_ms": None,
              "seen": [["clicks", "default", src, 40]], "counters": {"on_time": 3}}
    assert clock.fold(10, first, {"probe": [report]})["probe"]["on_time"] == 3
    second = clock.plan(11, 1, now_ms=2_000)
    assert second is not None and second.watermarks == {"probe": 38}  # 40 - lag, from txid 10
    again = WindowClock(r, namespace, _graph(), str(tmp_path)).plan(11, 1, now_ms=9_999)
    assert again == second  # a re-run (even by a new driver) reads the record back
    clock.fold(11, second, {"probe": [{**report, "seen": []}]})
    final = clock.plan(12, 2, now_ms=3_000)
    assert final is not None and final.final and final.watermarks == {"probe": END_OF_TIME_MS}
