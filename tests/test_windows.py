"""Windows: assigners, watermark, windower state, the windowed bolt on the local engine."""

from __future__ import annotations

import json
import pickle
from datetime import datetime
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from support.windows_fixtures import BillingTopology, DailySpend, run_probe

from stormshift.engines.local.engine import LocalEngine
from stormshift.engines.local.scheduler import SimClock
from stormshift.topology.loader import load_topology
from stormshift.windows import (
    END_OF_TIME_MS,
    START_OF_TIME_MS,
    Accumulation,
    CalendarDays,
    Count,
    Pane,
    Sessions,
    Sliding,
    Timing,
    Trigger,
    Tumbling,
    WatermarkTracker,
    Window,
    Windower,
    Windowing,
)

LA = ZoneInfo("America/Los_Angeles")


def ms(*args: int, zone: ZoneInfo = LA) -> int:
    return int(datetime(*args, tzinfo=zone).timestamp() * 1000)


# -- assigners --------------------------------------------------------------------
def test_tumbling_and_sliding_are_half_open() -> None:
    assert Tumbling(10).assign(9) == [Window(0, 10)]
    assert Tumbling(10).assign(10) == [Window(10, 20)]
    assert Tumbling(10).assign(-1) == [Window(-10, 0)]
    assert Sliding(10, 5).assign(5) == [Window(0, 10), Window(5, 15)]
    assert Sessions(30).assign(7) == [Window(7, 37)]


def test_calendar_days_follow_the_zone_midnight_and_dst() -> None:
    days = CalendarDays("America/Los_Angeles")
    (nov30,) = days.assign(ms(2024, 11, 30, 23, 59, 59) + 999)
    assert nov30 == Window(ms(2024, 11, 30), ms(2024, 12, 1))
    assert days.assign(ms(2024, 12, 1)) == [Window(ms(2024, 12, 1), ms(2024, 12, 2))]
    (fall_back,) = days.assign(ms(2024, 11, 3, 12))
    assert fall_back.end_ms - fall_back.start_ms == 25 * 3_600_000
    (spring,) = days.assign(ms(2024, 3, 10, 12))
    assert spring.end_ms - spring.start_ms == 23 * 3_600_000


def test_month_boundary_click_is_billed_to_november() -> None:
    """The Nov 30 23:59:59 (Los Angeles) click arrives after a Dec 1 click: by event
    time it is November's, in a daily window aligned to Los Angeles midnight."""
    clicks = [["acme", ms(2024, 11, 30, 12), 1.5],
              ["acme", ms(2024, 12, 1, 0, 0, 2), 2.0],
              ["acme", ms(2024, 11, 30, 23, 59, 59), 4.0],  # processed Dec 1
              ["zed", ms(2024, 12, 1, 9), 1.0]]
    engine = LocalEngine(load_topology(BillingTopology), clock=SimClock(),
                         conf_overrides={"fixture.clicks": clicks})
    summary = engine.run()
    assert not list(summary.problems.kinds())
    assert summary.output("monthly") == [["acme", "2024-11", 5.5], ["acme", "2024-12", 2.0],
                                         ["zed", "2024-12", 1.0]]
    assert summary.components["daily"].windows == {
        "on_time": 4, "late_updated": 0, "dropped_late": 0, "late_stream": 0}
    assert DailySpend.windowing.tick_interval_ms() is None  # no ticks needed


# -- watermark ----------------------------------------------------------------------
def test_watermark_is_min_over_partitions_minus_lag_and_never_goes_back() -> None:
    wm = WatermarkTracker(5, expected=["p0", "p1"])
    wm.observe("p0", 100, now_ms=0)
    assert wm.advance(0) == START_OF_TIME_MS  # p1 not heard from yet
    wm.observe("p1", 50, now_ms=0)
    assert wm.advance(0) == 45
    wm.observe("p1", 40, now_ms=0)
    assert wm.advance(0) == 45
    wm.observe("p1", 200, now_ms=0)
    assert wm.advance(0) == 95
    assert wm.end_of_input() == END_OF_TIME_MS


def test_idle_partition_stops_holding_the_watermark() -> None:
    wm = WatermarkTracker(0, expected=["p0", "p1"], idle_timeout_ms=1000)
    wm.observe("p0", 10, now_ms=0)
    wm.observe("p1", 5, now_ms=0)
    wm.observe("p0", 30, now_ms=900)
    assert wm.advance(999) == 5
    assert wm.advance(1000) == 30  # p1 idle since 0
    wm.observe("p1", 7, now_ms=1100)  # back: counts again, but the watermark holds
    assert wm.advance(1100) == 30
    snap = pickle.loads(pickle.dumps(wm.snapshot()))
    again = WatermarkTracker(0, idle_timeout_ms=1000)
    again.restore(snap)
    assert again.snapshot() == wm.snapshot()


# -- windower -----------------------------------------------------------------------
def _feed(windower: Windower, events: list[tuple[str, int]], lag_ms: int) -> list[Any]:
    out: list[Any] = []
    top = START_OF_TIME_MS
    for key, t in events:
        out += windower.add(key, t, t, 0).outputs
        top = max(top, t)
        out += windower.advance(top - lag_ms, 0)
    return out


def test_snapshot_restore_mid_stream_gives_the_same_panes() -> None:
    events = [("a", 1), ("b", 3), ("a", 12), ("a", 4), ("b", 25), ("a", 31), ("b", 9)]

    def build() -> Windower:
        return Windower(Tumbling(10), trigger=Trigger(early_every_count=2),
                        accumulation=Accumulation.RETRACTING, aggregation=Count(),
                        allowed_lateness_ms=15)

    whole = build()
    expected = _feed(whole, events, 2) + whole.advance(END_OF_TIME_MS, 0)
    first = build()
    out = _feed(first, events[:4], 2)
    second = build()
    second.restore(pickle.loads(pickle.dumps(first.snapshot())))
    top = max(t for _, t in events[:4])
    for key, t in events[4:]:
        out += second.add(key, t, t, 0).outputs
        top = max(top, t)
        out += second.advance(top - 2, 0)
    out += second.advance(END_OF_TIME_MS, 0)
    assert out == expected
    assert second.windows == {}  # every window expired and was deleted


def test_event_time_timers_fire_in_time_order_with_windows() -> None:
    w = Windower(Tumbling(10), aggregation=Count())
    w.set_timer("k", 10, "b")
    w.set_timer("k", 5, "a")
    w.add("k", 3, None, 0)
    out = w.advance(10, 0)
    assert [type(o).__name__ for o in out] == ["TimerFired", "Pane", "TimerFired"]
    assert isinstance(out[1], Pane) and out[1].timing is Timing.ON_TIME and out[1].is_final


# -- the windowed bolt on the local engine ---------------------------------------------
def _rows(summary: Any, stream: str = "default") -> list[list[Any]]:
    assert not [k.headline() for k in summary.problems.kinds()]
    return summary.output("probe", stream)


def test_tumbling_count_windows_in_arrival_order() -> None:
    clicks = [["a", 0, i] for i in range(7)]
    rows = _rows(run_probe("count3", clicks))
    assert [json.loads(r[4]) for r in rows] == [[0, 1, 2], [3, 4, 5]]  # 6 stays: not full


def test_sliding_count_windows_start_partial_like_storm() -> None:
    clicks = [["a", i, i] for i in range(6)]
    rows = _rows(run_probe("sliding_count4by2", clicks))
    assert [json.loads(r[4]) for r in rows] == [[0, 1], [0, 1, 2, 3], [2, 3, 4, 5]]
    assert [json.loads(r[6]) for r in rows] == [[], [], [0, 1]]  # get_expired


def test_event_time_count_windows_count_in_event_time_order() -> None:
    clicks = [["a", 5, 1], ["a", 2, 2], ["a", 30, 3], ["a", 1, 4], ["a", 31, 5]]
    summary = run_probe("count2_event_time", clicks)
    rows = _rows(summary)
    assert [json.loads(r[4]) for r in rows] == [[2, 1], [3, 5]]
    assert summary.output("probe", "late") == [["a", 1, 4]]  # behind the watermark (20)
    assert summary.components["probe"].windows["dropped_late"] == 1


def test_sliding_time_windows_get_new_and_expired() -> None:
    clicks = [["a", 1, 1], ["a", 12, 2], ["a", 25, 3]]
    rows = _rows(run_probe("sliding_expired", clicks))
    got = [(r[1], r[2], json.loads(r[4]), json.loads(r[6])) for r in rows]
    assert got == [(-10, 10, [1], []), (0, 20, [1, 2], []), (10, 30, [2, 3], [1]),
                   (20, 40, [3], [2])]


def test_processing_time_windows_use_the_tick_clock() -> None:
    assert Windowing.tumbling(duration_ms=2000).tick_interval_ms() == 1000
    summary = run_probe("processing_time", [["a", 0, 1], ["a", 0, 2]], tick_secs=1)
    assert [(r[1], r[2], r[3]) for r in _rows(summary)] == [(0, 2000, "on_time")]


def test_timers_set_by_user_code_fire_by_watermark() -> None:
    summary = run_probe("timers", [["a", 1, 1], ["a", 12, 2]])
    assert summary.output("probe", "timer") == [["a", 25], ["a", 35]]


def test_get_on_an_aggregating_window_says_to_read_result() -> None:
    summary = run_probe("sum_get", [["a", 1, 1]])
    messages = {kind.message for kind in summary.problems.kinds()}
    assert any("read window.result" in m for m in messages), messages


def test_undeclared_late_stream_names_the_fix() -> None:
    summary = run_probe("undeclared_late", [["a", 1, 1]])
    messages = {kind.message for kind in summary.problems.kinds()}
    assert any("late tuple stream 'nowhere' is not declared" in m for m in messages), messages


def test_spec_requests_the_ticks_its_triggers_need() -> None:
    class Early(DailySpend):
        windowing = DailySpend.windowing.with_trigger(Trigger(early_every_ms=60_000))

    spec = Early.spec(name="early")
    assert json.loads(spec.config) == {"topology.tick.tuple.freq.secs": 60.0}
    mine = Early.spec(name="e", config={"topology.tick.tuple.freq.secs": 5})
    assert json.loads(mine.config) == {"topology.tick.tuple.freq.secs": 5}


def test_count_windows_refuse_triggers() -> None:
    with pytest.raises(ValueError, match="count windows fire once"):
        Windowing.tumbling(count=3).with_trigger(Trigger(early_every_count=1)).check("x")


def test_event_time_snapshot_leaves_out_only_what_follows_the_processing_clock() -> None:
    """Two tasks fed the same tuples at different processing times: their snapshots differ,
    their event-time snapshots (what the fault suite compares) do not."""
    from stormshift.windows import Windowing
    from stormshift.windows.state import WindowingState

    def fed(clock_ms: int) -> WindowingState:
        state = WindowingState.build(Windowing.tumbling(duration_ms=60_000).with_lag(1_000), [])
        state.processing_ms = clock_ms
        state.tracker.observe(("parse", "default", 1), 5_000, clock_ms)
        assert state.windower is not None
        state.windower.add("ad-1", 5_000, "click", clock_ms)
        return state

    early, late = fed(1_000), fed(9_000_000)
    assert early.snapshot() != late.snapshot()
    assert early.event_time_snapshot() == late.event_time_snapshot()
    assert early.event_time_snapshot()["windows"] == early.snapshot()["windows"]
    assert "last_seen_ms" not in early.event_time_snapshot()["watermark"]
