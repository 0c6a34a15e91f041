"""Window scenarios as data (``windows_scenarios/*.json``), replayed on the pure
logic and through the local engine; plus arrival-order properties (seeded)."""

from __future__ import annotations

from typing import Any

import pytest
from support.late_stream import late_stream
from support.windows_fixtures import run_local
from support.windows_harness import all_names, load, run_pure

SCENARIOS = all_names()


def test_scenario_files_exist() -> None:
    assert len(SCENARIOS) >= 6


@pytest.mark.parametrize("name", SCENARIOS)
def test_scenario_on_pure_logic(name: str) -> None:
    scenario = load(name)
    out, counters = run_pure(scenario)
    assert out == scenario["expected"]
    assert counters == scenario["counters"]


@pytest.mark.parametrize("name", SCENARIOS)
def test_scenario_on_local_engine(name: str) -> None:
    scenario = load(name)
    out, counters = run_local(name)
    assert out == scenario["expected"]
    assert counters == scenario["counters"]


def _property_scenario(window: dict[str, Any]) -> dict[str, Any]:
    return {"windowing": {**window, "lag_ms": 20}, "steps": []}


@pytest.mark.parametrize("window", [{"tumbling_ms": 50}, {"sliding_ms": [60, 20]},
                                    {"session_gap_ms": 4}], ids=["tumbling", "sliding",
                                                                 "sessions"])
@pytest.mark.parametrize("seed", range(5))
def test_arrival_order_within_lag_changes_nothing_pure(window: dict[str, Any], seed: int
                                                       ) -> None:
    print(f"seed={seed}")
    scenario = _property_scenario(window)
    in_order, _ = run_pure(scenario, late_stream(seed, 300, 1))  # lag 1: event-time order
    shuffled, counters = run_pure(scenario, late_stream(seed, 300, 20))
    assert counters["late_updated"] == counters["dropped_late"] == 0, f"seed={seed}"
    assert shuffled == in_order, f"seed={seed}"


@pytest.mark.parametrize("seed", range(2))
def test_arrival_order_within_lag_changes_nothing_local(seed: int) -> None:
    print(f"seed={seed}")
    in_order, _ = run_local("sliding_with_lag", late_stream(seed, 120, 1))
    shuffled, counters = run_local("sliding_with_lag", late_stream(seed, 120, 2))
    assert counters["late_updated"] == counters["dropped_late"] == 0, f"seed={seed}"
    assert shuffled == in_order, f"seed={seed}"
    assert in_order == run_pure(load("sliding_with_lag"), late_stream(seed, 120, 2))[0]


def test_bolt_tasks_keyed_like_the_grouping() -> None:
    """Two windowed bolt tasks (fields grouping on the key): the same panes, per key."""
    one, _ = run_local("tumbling_late_pane_then_late_stream")
    two, _ = run_local("tumbling_late_pane_then_late_stream", bolt_par=2)
    key = lambda d: repr(sorted(d.items()))
    assert sorted(one, key=key) == sorted(two, key=key)
