"""The sys.path policy on Spark (``stormshift.topology.sources``): a project's
``src/queue.py`` / ``src/json.py`` shadow the standard library neither in the driver,
nor in Spark's planner process (a generic spout is hosted there), nor in a Python
worker; and two projects with the same ``spouts.numbers.NumberSpout`` run one after
another in one session (reused workers) each with its own class."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from support.local_fixtures import PICKY, STDNAMES, from_stdlib

from stormshift.engines.spark import SparkEngine
from stormshift.topology.loader import load_topology

pytestmark = [pytest.mark.spark, pytest.mark.redis]


def run(spark: Any, project: Path, tmp_path: Path, redis_url: str, namespace: str) -> Any:
    engine = SparkEngine(load_topology(project), checkpoint_dir=str(tmp_path), redis_url=redis_url,
                         spark=spark, namespace=namespace, batch_max_tuples=10, until_done=True)
    return engine.run()


def test_stdlib_named_modules_shadow_nothing_and_projects_keep_their_classes(
        spark: Any, redis_url: str, namespace: str, tmp_path: Path) -> None:
    for attempt in range(2):
        s = run(spark, STDNAMES, tmp_path / f"stdnames{attempt}", redis_url, f"{namespace}-s{attempt}")
        rows = s.output("probe_bolt")
        assert sorted(n for n, _, _ in rows) == list(range(30))
        # spout_origins: Spark's planner process; bolt_origins: a Python worker
        assert all(from_stdlib(spout + bolt) for _, spout, bolt in rows), rows[:2]
        import json
        import queue

        assert from_stdlib([json.__file__ or "", queue.__file__ or ""])  # the driver

        s = run(spark, PICKY, tmp_path / f"picky{attempt}", redis_url, f"{namespace}-p{attempt}")
        assert sorted(n for n, _ in s.output("picky_bolt")) == [n for n in range(70) if n % 7]
        assert s["picky_bolt"].dead_lettered == 10
