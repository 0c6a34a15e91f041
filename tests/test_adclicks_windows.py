"""examples/adclicks' event-time reports on the local engine equal an independent oracle.

The oracle (``examples/adclicks/expected.py``: ``compute_windowed``) reads the
log lines alone and buckets every record by its ``ts``; the topology's windowed
bolts (``src/bolts/windows.py``) see the same lines out of order, late and
duplicated, through watermarks, triggers, retractions and per-advertiser time
zones. Both must give the same per-ad-minute CTR, per-advertiser-day spend,
budget alerts and user sessions -- including the click logged at 23:59:59 on
Nov 30 (New York) that arrives after December's first events: billed to November.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from datetime import datetime
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from stormshift.engines.local import LocalEngine, SimClock
from stormshift.topology.loader import load_topology
from stormshift.windows import CalendarDays, Windower

ADCLICKS = Path(__file__).resolve().parents[1] / "examples" / "adclicks"
EVENTS = 6_000
BUDGET = 5_000_000  # $5 a day: at 6,000 events, a few advertiser-days reach it


def _load(name: str, path: Path) -> Any:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


expected = _load("adclicks_expected_windows", ADCLICKS / "expected.py")
adgen = _load("adclicks_adgen_windows", ADCLICKS / "src" / "adgen.py")


def _run(**overrides: Any) -> Any:
    graph = load_topology(ADCLICKS, overrides={"adclicks.events": EVENTS, **overrides})
    return LocalEngine(graph, clock=SimClock(ms_per_round=1), seed=0).run()


@pytest.fixture(scope="module")
def windowed_run() -> Any:
    return _run(**{"adclicks.daily_budget_micros": BUDGET})  # adclicks.windows: on by default


@pytest.fixture(scope="module")
def oracle() -> Any:
    lines = expected.generated_lines(seed=7, events=EVENTS)
    return expected.compute_windowed(lines, adgen.advertiser_zone, BUDGET)


def test_minute_ctr_equals_the_oracle(windowed_run: Any, oracle: Any) -> None:
    got = {k: (v[2], v[4]) for k, v in windowed_run.latest("minute_ctr_bolt", key_len=2).items()}
    assert got == oracle.ctr_by_ad_minute
    counters = windowed_run["ad_ctr_minute_bolt"].windows
    assert counters["late_updated"] > 0 and counters["dropped_late"] == 0


def test_daily_spend_and_budget_alerts_equal_the_oracle(windowed_run: Any, oracle: Any) -> None:
    got = {k: v[3] for k, v in windowed_run.latest("daily_spend_bolt", key_len=2).items()}
    assert got == oracle.spend_by_advertiser_day
    alerts = windowed_run.output("budget_alert_bolt")
    assert len(oracle.alerts) >= 2
    assert sorted((a[0], a[1]) for a in alerts) == oracle.alerts  # each day alerted once
    assert all(a[2] == BUDGET and a[3] >= BUDGET for a in alerts)


def test_user_sessions_equal_the_oracle(windowed_run: Any, oracle: Any) -> None:
    got = {u: tuple(v[1:]) for u, v in windowed_run.latest("user_sessions_report_bolt").items()}
    assert got == oracle.sessions_by_user
    assert windowed_run["user_sessions_bolt"].windows["late_updated"] > 0  # sessions re-fired


def test_per_ad_totals_do_not_change_with_windows_on(windowed_run: Any) -> None:
    want = expected.compute(expected.generated_lines(seed=7, events=EVENTS))
    ctr = {ad: tuple(v[1:]) for ad, v in windowed_run.latest("ads_ctr_bolt").items()}
    assert ctr == {ad: tuple(t) for ad, t in want.ctr_by_ad.items()}


def test_month_boundary_click_is_billed_to_november(windowed_run: Any, oracle: Any) -> None:
    cfg = adgen.GenConfig(events=EVENTS)
    boundary = adgen.month_boundary_ms(cfg, "adv-000")
    ny = ZoneInfo("America/New_York")
    assert datetime.fromtimestamp(boundary // 1000, ny) == datetime(2023, 12, 1, tzinfo=ny)
    records = [json.loads(line) for line in adgen.generate_lines(cfg)]
    [at] = [i for i, r in enumerate(records) if r["ts"] == boundary - 1000]
    click = records[at]
    assert (click["advertiser_id"], click["event_type"]) == ("adv-000", "click")
    assert datetime.fromtimestamp(click["ts"] // 1000, ny).strftime("%b %d %H:%M:%S") == \
        "Nov 30 23:59:59"
    # processed after December's events of the same advertiser ...
    assert any(r["ts"] >= boundary and r["advertiser_id"] == "adv-000" for r in records[:at])
    # ... and a clock-driven bucket (its arrival time) would bill it to December
    arrival_ms = cfg.day_start_ms + at * adgen.DAY_MS // cfg.events
    assert datetime.fromtimestamp(arrival_ms // 1000, ny).day == 1
    november = sum(r["cost"] for r in records
                   if r["advertiser_id"] == "adv-000" and r["ts"] < boundary)
    spend = {k: v[3] for k, v in windowed_run.latest("daily_spend_bolt", key_len=2).items()}
    assert spend[("adv-000", "2023-11-30")] == november == \
        oracle.spend_by_advertiser_day[("adv-000", "2023-11-30")]
    assert click["cost"] > 0


def test_windows_are_on_by_default_and_the_switch_turns_them_off() -> None:
    """By default the event-time reports run beside the legacy totals (parse_bolt emits
    every good line on ``events`` too); ``adclicks.windows=false`` leaves the legacy
    topology alone: its two leaf streams, the windowed bolts seeing nothing."""
    on = _run(**{"adclicks.events": 2000})
    # (no advertiser-day reaches the $250 budget in 2,000 events: no alert)
    assert sorted(on.outputs) == [
        ("ads_ctr_bolt", "default"), ("client_spent_bolt", "default"),
        ("daily_spend_bolt", "default"), ("minute_ctr_bolt", "default"),
        ("user_sessions_report_bolt", "default")]
    assert on["ad_ctr_minute_bolt"].tuples_in == 2000
    assert on["parse_bolt"].tuples_out == 2 * 2000
    off = _run(**{"adclicks.events": 2000, "adclicks.windows": False})
    assert sorted(off.outputs) == [("ads_ctr_bolt", "default"),
                                   ("client_spent_bolt", "default")]
    assert off["ad_ctr_minute_bolt"].tuples_in == 0
    assert off["parse_bolt"].tuples_out == 2000


def test_calendar_days_in_each_keys_own_zone() -> None:
    zones = {"ny": "America/New_York", "tokyo": "Asia/Tokyo"}
    windower = Windower(CalendarDays(zone_of=zones.get))
    at = 1_701_406_799_000  # Nov 30 23:59:59 in New York = Dec 1 13:59:59 in Tokyo
    windower.add("ny", at, "a", 0)
    windower.add("tokyo", at, "b", 0)
    days = {k: sorted(w.start_ms for w in states) for k, states in
            ((windower.keys[k], s) for k, s in windower.windows.items())}
    ny_start = datetime(2023, 11, 30, tzinfo=ZoneInfo("America/New_York")).timestamp() * 1000
    tokyo_start = datetime(2023, 12, 1, tzinfo=ZoneInfo("Asia/Tokyo")).timestamp() * 1000
    assert days == {"ny": [int(ny_start)], "tokyo": [int(tokyo_start)]}
    assert CalendarDays(zone="UTC", zone_of=zones.get).zone_for("elsewhere") == "UTC"
