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
CHAIN = ["parse", "enrich", "drop", "spend", "report", "rank", "buckets"]


def run(spark: Any, data: Path, tmp: Path, redis_url: str, namespace: str, *, fuse: bool,
        batch: int, keyed: bool = False) -> dict[str, Any]:
    overrides: dict[str, Any] = {"jsonlines.path": str(data)}
    if not fuse:
        overrides["stormshift.fuse"] = False
    if keyed:
        overrides["stormshift.fuse.keyed"] = ["rank"]
    graph = load_topology(PROJECT, overrides=overrides)
    plan = spark_plan(graph)
    assert any(s["fused"] for s in plan["stages"]) is fuse  # the plan the case means
    assert any(s["spout_partitions"] for s in plan["stages"]) is fuse
    fused_keyed = [f["bolt"] for s in plan["stages"] for f in s["fused"] if f["keyed"]]
    assert fused_keyed == (["rank"] if keyed else [])
    engine = SparkEngine(graph, checkpoint_dir=str(tmp / f"ck-{namespace}"), redis_url=redis_url,
                         spark=spark, namespace=namespace, batch_max_tuples=batch,
                         until_done=True, trigger_secs=0.3, read_state=True)
    s = engine.run(on_progress=lambda line: None)
    assert s.stop_reason == "done"
    assert sum(s[c].dead_lettered for c in s.components) == 0
    got = outcome(s.outputs, {b: st.tasks for b, st in s.final_state.items()})
    got["tuples_in"] = {c: s[c].tuples_in for c in CHAIN}
    return got


@pytest.mark.parametrize(("fused_batch", "unfused_batch", "keyed"),
                         [(40, 40, False), (17, 110, True)],
                         ids=["same-cuts", "other-cuts-and-keyed-fusion"])
def test_fused_and_unfused_plans_compute_the_same(spark, redis_url, namespace, tmp_path,
                                                  fused_batch, unfused_batch, keyed):
    """``keyed``: rank (fields by ad behind spend, itself fields by ad) runs fused by key too
    (``stormshift.fuse.keyed``), each emit checked to route to the running task."""
    data = tmp_path / "in"
    events = write_input(data)
    fused = run(spark, data, tmp_path, redis_url, namespace, fuse=True, batch=fused_batch,
                keyed=keyed)
    unfused = run(spark, data, tmp_path, redis_url, f"{namespace}-unfused", fuse=False,
                  batch=unfused_batch)
    assert differences(fused, unfused) == []
    check_expected(fused, events)


def test_keyed_fusion_behind_a_bolt_that_changes_keys_fails_naming_the_fix(
        spark, redis_url, namespace, tmp_path):
    """Storm routes by the emitted values: ``shift`` emits other keys than it is given, so
    ``sums`` (opted in to keyed fusion) would get keys of another task. The run fails with
    one line naming the bolt, the values and the fix; without the opt-in it runs."""
    import sys

    sys.path.insert(0, str(Path(__file__).parent / "spark_fixtures"))
    import sparktopo

    from stormshift.errors import RunFailedError

    graph = load_topology(sparktopo.KeyedMismatch)
    engine = SparkEngine(graph, checkpoint_dir=str(tmp_path / "ck"), redis_url=redis_url,
                         spark=spark, namespace=namespace, batch_max_tuples=30, until_done=True)
    with pytest.raises(RunFailedError) as err:
        engine.run(on_progress=lambda line: None)
    text = str(err.value)
    assert "KeyedFusionError: 'sums' runs fused by key behind 'shift'" in text, text
    assert "fix: remove 'sums' from stormshift.fuse.keyed" in text
    plain = load_topology(sparktopo.KeyedMismatch, overrides={"stormshift.fuse.keyed": None})
    s = SparkEngine(plain, checkpoint_dir=str(tmp_path / "ck2"), redis_url=redis_url, spark=spark,
                    namespace=f"{namespace}-plain", batch_max_tuples=30,
                    until_done=True).run(on_progress=lambda line: None)
    assert s.stop_reason == "done" and s["sums"].tuples_in == sparktopo.N_NUMBERS
