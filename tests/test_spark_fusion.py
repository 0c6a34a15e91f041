"""Fusion changes nothing a topology computes: the fused plan and ``-o stormshift.fuse=false``
(every hop a row and a shuffle) on real Spark and real Redis, compared key by key.

The topology (``tests/fixtures/topologies/fusedchain``) is a chain as real projects
build one: a head on its spout's partitions, ``local_or_shuffle`` and ``none`` members
fused behind it, a ``BatchingBolt`` flushed by ticks, a fields-grouped float sum with a
``shuffle``-fused report, and per-task state in every bolt. Each case runs both plans
with its own batch cuts (the property: results depend neither on where batches are cut
nor on the plan); what is compared, and how, is ``support/fusion_outcome.py``'s.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from support.fusion_outcome import PROJECT, check_expected, differences, outcome, write_input

from stormshift.engines.spark import SparkEngine, spark_plan
from stormshift.topology.loader import load_topology

pytestmark = [pytest.mark.spark, pytest.mark.redis]
CHAIN = ["parse", "enrich", "drop", "spend", "report", "buckets"]


def run(spark: Any, data: Path, tmp: Path, redis_url: str, namespace: str, *, fuse: bool,
        batch: int) -> dict[str, Any]:
    overrides: dict[str, Any] = {"jsonlines.path": str(data)}
    if not fuse:
        overrides["stormshift.fuse"] = False
    graph = load_topology(PROJECT, overrides=overrides)
    plan = spark_plan(graph)
    assert any(s["fused"] for s in plan["stages"]) is fuse  # the plan the case means
    assert any(s["spout_partitions"] for s in plan["stages"]) is fuse
    engine = SparkEngine(graph, checkpoint_dir=str(tmp / f"ck-{namespace}"), redis_url=redis_url,
                         spark=spark, namespace=namespace, batch_max_tuples=batch,
                         until_done=True, trigger_secs=0.3, read_state=True)
    s = engine.run(on_progress=lambda line: None)
    assert s.stop_reason == "done"
    assert sum(s[c].dead_lettered for c in s.components) == 0
    got = outcome(s.outputs, {b: st.tasks for b, st in s.final_state.items()})
    got["tuples_in"] = {c: s[c].tuples_in for c in CHAIN}
    return got


@pytest.mark.parametrize(("fused_batch", "unfused_batch"), [(40, 40), (17, 110)],
                         ids=["same-cuts", "other-cuts"])
def test_fused_and_unfused_plans_compute_the_same(spark, redis_url, namespace, tmp_path,
                                                  fused_batch, unfused_batch):
    data = tmp_path / "in"
    events = write_input(data)
    fused = run(spark, data, tmp_path, redis_url, namespace, fuse=True, batch=fused_batch)
    unfused = run(spark, data, tmp_path, redis_url, f"{namespace}-unfused", fuse=False,
                  batch=unfused_batch)
    assert differences(fused, unfused) == []
    check_expected(fused, events)
