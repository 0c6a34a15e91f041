"""Fusion changes nothing a topology computes: the fused plan and ``-o stormshift.fuse=false``
(every hop a row and a shuffle) on real Spark and real Redis, compared key by key.

The topology (``tests/fixtures/topologies/fusedchain``) is a chain as real projects
build one: a head on its spout's partitions, ``local_or_shuffle`` and ``none`` members
fused behind it, a ``BatchingBolt`` flushed by ticks, a fields-grouped float sum with a
``shuffle``-fused report, and per-task state in every bolt. Each case runs both plans
with different batch cuts (the property: results do not depend on where batches are cut
nor on the plan). What a shuffle grouping leaves open (which task gets a tuple) differs
between the plans, so per-task state of a shuffle-fed bolt is compared summed over its
tasks; a fields-grouped bolt's state is compared per task. Float sums are added in
arrival order, which a shuffle upstream may change, so they are compared to 1e-12
relative (and to the exact decimal total); every count and integer sum exactly.
"""

from __future__ import annotations

import json
import math
import random
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from stormshift.engines.spark import SparkEngine, spark_plan
from stormshift.topology.loader import load_topology

pytestmark = [pytest.mark.spark, pytest.mark.redis]

PROJECT = Path(__file__).parent / "fixtures" / "topologies" / "fusedchain"
ADS = ["Ad1", " ad2", "AD3 ", "ad4", "Ad5", "ad6 ", "aD7"]
FILES = {"part-000.jsonl": 150, "part-001.jsonl": 90}  # uneven on purpose: spout task i, file i


def write_input(folder: Path, seed: int = 11) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    folder.mkdir(parents=True, exist_ok=True)
    events, n = [], 0
    for name, count in FILES.items():
        lines = []
        for _ in range(count):
            cents = 0 if rng.random() < 0.1 else rng.randrange(1, 1000)
            event = {"n": n, "ad": rng.choice(ADS), "price": cents / 100}
            events.append(event)
            lines.append(json.dumps(event))
            n += 1
        (folder / name).write_text("\n".join(lines) + "\n")
    return events


def run(spark: Any, data: Path, tmp: Path, redis_url: str, namespace: str, *, fuse: bool,
        batch: int) -> Any:
    overrides: dict[str, Any] = {"jsonlines.path": str(data)}
    if not fuse:
        overrides["stormshift.fuse"] = False
    graph = load_topology(PROJECT, overrides=overrides)
    plan = spark_plan(graph)
    assert any(s["fused"] for s in plan["stages"]) is fuse  # the plan the case means
    engine = SparkEngine(graph, checkpoint_dir=str(tmp / f"ck-{namespace}"), redis_url=redis_url,
                         spark=spark, namespace=namespace, batch_max_tuples=batch,
                         until_done=True, trigger_secs=0.3, read_state=True)
    summary = engine.run(on_progress=lambda line: None)
    assert summary.stop_reason == "done"
    return summary


def outcome(s: Any) -> dict[str, Any]:
    """What both plans must agree on: sink results per key and state, as module doc says."""
    report: dict[str, Any] = {}
    emits: Counter[str] = Counter()
    for ad, spend, events, line in s.output("report"):
        # the final totals: the emit with the most events (a shuffle-fed report runs on two
        # tasks, so the sink's last row of an ad need not be its last running total)
        if events > report.get(ad, (0, 0))[1]:
            report[ad] = (spend, events, line)
        emits[ad] += 1
    buckets: dict[str, list[int]] = {}
    for ad, count, cents in s.output("buckets"):
        got = buckets.setdefault(ad, [0, 0])
        got[0] += count
        got[1] += cents
    state = s.final_state

    def summed(bolt: str, attr: str) -> Any:
        values = [t[attr] for t in state[bolt].tasks]
        return sum(values, Counter()) if isinstance(values[0], Counter) else sum(values)

    return {
        "report": report, "report_emits": emits, "buckets": buckets,
        "parsed": summed("parse", "parsed"), "enrich_by_ad": summed("enrich", "by_ad"),
        "dropped": summed("drop", "dropped"), "lines": summed("report", "lines"),
        "spend_tasks": [t["spend"] for t in state["spend"].tasks],  # fields: per task
        "events_tasks": [dict(t["events"]) for t in state["spend"].tasks],
        "tuples_in": {c: s[c].tuples_in for c in ("parse", "enrich", "drop", "spend", "report",
                                                    "buckets")},
        "dead_lettered": sum(s[c].dead_lettered for c in s.components),
    }


def same(a: Any, b: Any, where: str = "") -> list[str]:
    """Differences between two outcomes, key by key (floats to 1e-12 relative)."""
    if isinstance(a, float) or isinstance(b, float):
        ok = isinstance(a, (int, float)) and isinstance(b, (int, float)) and \
            math.isclose(a, b, rel_tol=1e-12)
        return [] if ok else [f"{where}: {a!r} != {b!r}"]
    if isinstance(a, dict) and isinstance(b, dict):
        if set(a) != set(b):
            return [f"{where}: keys {sorted(set(a) ^ set(b), key=str)} in one only"]
        return [d for k in sorted(a, key=str) for d in same(a[k], b[k], f"{where}.{k}")]
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)) and len(a) == len(b):
        return [d for i, (x, y) in enumerate(zip(a, b)) for d in same(x, y, f"{where}[{i}]")]
    return [] if a == b else [f"{where}: {a!r} != {b!r}"]


def expected(events: list[dict[str, Any]]) -> dict[str, Any]:
    paid = [e for e in events if round(e["price"] * 100)]
    by_ad: dict[str, list[Any]] = {}
    for e in paid:
        got = by_ad.setdefault(e["ad"].strip().lower(), [0, 0, []])
        got[0] += 1
        got[1] += round(e["price"] * 100)
        got[2].append(e["price"])
    return {"paid": by_ad, "free": len(events) - len(paid), "events": len(events)}


@pytest.mark.parametrize(("fused_batch", "unfused_batch"), [(40, 40), (17, 110)],
                         ids=["same-cuts", "other-cuts"])
def test_fused_and_unfused_plans_compute_the_same(spark, redis_url, namespace, tmp_path,
                                                  fused_batch, unfused_batch):
    data = tmp_path / "in"
    events = write_input(data)
    fused = outcome(run(spark, data, tmp_path, redis_url, namespace, fuse=True, batch=fused_batch))
    unfused = outcome(run(spark, data, tmp_path, redis_url, f"{namespace}-unfused", fuse=False,
                          batch=unfused_batch))
    assert same(fused, unfused) == []
    # and both equal what the input says (so agreeing is not agreeing on nothing)
    exp = expected(events)
    assert fused["parsed"] == exp["events"] == sum(FILES.values())
    assert fused["dropped"] == exp["free"] > 0
    assert {ad: (v[0], v[1]) for ad, v in fused["report"].items()} == \
        {ad: (pytest.approx(math.fsum(p[2]), rel=1e-12), p[0]) for ad, p in exp["paid"].items()}
    assert fused["report_emits"] == {ad: p[0] for ad, p in exp["paid"].items()}
    assert fused["buckets"] == {ad: [p[0], p[1]] for ad, p in exp["paid"].items()}
    assert sum(fused["enrich_by_ad"].values()) == exp["events"]
    assert fused["dead_lettered"] == 0
