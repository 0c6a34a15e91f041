"""Event-time windows on the Spark engine: real Spark (local[2]) and real Redis.

The window scenarios (``windows_scenarios/*.json``) run as micro-batches cut
where each scenario's watermark advances (``windows_harness.spark_batches``
says why) and must give the panes, retractions, late tuples and counters the
scenario expects -- the same as the pure logic and the local engine. A property:
final ON_TIME panes do not depend on where batches are cut (cuts drawn from a
printed seed). Replays after a driver kill: ``test_spark_windows_faults.py``.
"""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parent / "spark_fixtures"))

import windowtopo
from support.late_stream import late_stream
from support.windows_fixtures import collected
from support.windows_harness import all_names, load, run_pure, spark_batches

from stormshift.engines.spark import SparkEngine
from stormshift.topology.loader import load_topology

pytestmark = [pytest.mark.spark, pytest.mark.redis]


def run_spark(spark: Any, redis_url: str, namespace: str, tmp_path: Path, name: str,
              steps: list[dict[str, Any]], cuts: list[int], times: list[int]
              ) -> tuple[list[dict[str, Any]], dict[str, int], Any]:
    scenario = load(name)
    graph = load_topology(windowtopo.topology(scenario.get("partitions", 1)), overrides={
        "steps.steps": json.dumps(steps), "steps.cuts": json.dumps(cuts),
        "steps.partitions": scenario.get("partitions", 1), "fixture.scenario": name})
    clock = iter(times)
    engine = SparkEngine(graph, checkpoint_dir=str(tmp_path / f"ck-{name}"), redis_url=redis_url,
                         spark=spark, namespace=namespace, until_done=True,
                         clock=lambda: next(clock, times[-1]))
    summary = engine.run()
    assert summary.stop_reason == "done", summary.stop_reason
    return (*collected(summary), summary)


@pytest.mark.parametrize("name", all_names())
def test_scenario_on_spark_engine(spark, redis_url, namespace, tmp_path, name) -> None:
    scenario = load(name)
    steps, cuts, times = spark_batches(scenario)
    out, counters, summary = run_spark(spark, redis_url, namespace, tmp_path, name, steps, cuts,
                                       times)
    assert out == scenario["expected"]
    assert counters == scenario["counters"]
    late = sum(1 for e in scenario["expected"] if "late" in e)
    assert summary.components["windows"].windows.get("late_stream", 0) == late


def _random_cuts(seed: int, n: int) -> list[int]:
    rng = random.Random(seed)
    cuts, at = [], 0
    while at < n:
        at += rng.randint(1, max(2, n // 3))
        cuts.append(min(at, n))
    return cuts


@pytest.mark.parametrize("seed", [11, 12])
def test_on_time_panes_do_not_depend_on_batch_boundaries(spark, redis_url, namespace, tmp_path,
                                                         seed) -> None:
    """Elements out of order within the lag, batches cut at random (seeded) places: the
    ON_TIME panes are those of the pure logic run tuple at a time."""
    print(f"seed={seed}")
    name = "sliding_with_lag"
    steps = late_stream(seed, 40, 2)
    cuts = _random_cuts(seed, len(steps))
    print(f"cuts={cuts}")
    expected, _ = run_pure(load(name), steps)
    out, counters, _ = run_spark(spark, redis_url, namespace, tmp_path, name, steps, cuts,
                                 [0] * (len(cuts) + 2))
    assert counters == {"on_time": 40, "late_updated": 0, "dropped_late": 0}, f"seed={seed}"
    assert [p for p in out if p.get("pane") == "on_time"] == expected, f"seed={seed}"
