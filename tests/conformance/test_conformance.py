"""Each scenario on each engine, compared with its oracle (see ``harness.py``).

The Spark cases share the one test session (``spark`` fixture) and each gets its own
Redis namespace and checkpoint; a failure names the seed that reproduces its batch cuts.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from conformance.harness import (
    ENGINES,
    load_scenario,
    observe,
    reproduce,
    rows_of,
    run_local,
    run_spark,
    scenario_names,
)
from conformance.oracle import ORACLES

pytestmark = pytest.mark.conformance


def _cases() -> list[Any]:
    cases = []
    for name in scenario_names():
        scenario = load_scenario(name)
        for engine in ENGINES:
            marks = []  # the tier (spark, redis) comes from the fixtures: tests/tier_guard.py
            reason = scenario.get("xfail", {}).get(engine)
            if reason:
                marks.append(pytest.mark.xfail(reason=reason, strict=True))
            cases.append(pytest.param(name, engine, marks=marks, id=f"{name}-{engine}"))
    return cases


def _differences(scenario: dict[str, Any], engine: str, summary: Any,
                 letters: Any) -> dict[str, Any]:
    """Each check whose observed value differs from the oracle's, with both."""
    expected = ORACLES[scenario["oracle"]](rows_of(scenario))
    differ = {}
    for check in scenario["checks"]:
        got = observe(check, summary, engine, scenario, letters)
        if got != expected[check]:
            differ[check] = {"expected": expected[check], "got": got}
    return differ


def test_every_scenario_lists_checks_its_oracle_computes() -> None:
    for name in scenario_names():
        scenario = load_scenario(name)
        expected = ORACLES[scenario["oracle"]](rows_of(scenario))
        assert scenario["checks"], name
        assert set(scenario["checks"]) <= set(expected), name


@pytest.mark.parametrize(("name", "engine"), [c for c in _cases() if c.values[1] == "local"])
def test_scenario_on_local_engine(name: str, engine: str) -> None:
    scenario = load_scenario(name)
    summary, letters = run_local(name, scenario)
    differ = _differences(scenario, engine, summary, letters)
    assert not differ, f"{name} on {engine}: {differ} {reproduce(name, engine)}"


@pytest.mark.parametrize(("name", "engine"), [c for c in _cases() if c.values[1] == "spark"])
def test_scenario_on_spark(name: str, engine: str, spark: Any, redis_url: str,
                           namespace: str, tmp_path: Path) -> None:
    scenario = load_scenario(name)
    summary, letters = run_spark(name, scenario, spark, redis_url, namespace, tmp_path / "ck")
    differ = _differences(scenario, engine, summary, letters)
    assert not differ, f"{name} on {engine}: {differ} {reproduce(name, engine)}"
