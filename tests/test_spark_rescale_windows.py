"""A windowed bolt's windows survive a change of par on the Spark engine (real Spark, Redis).

A fields-grouped windowed bolt (per-key counts per 10 ms of event time) runs at
par 2, stops part way with windows open, and comes back at par 3 on the same
checkpoint: its per-key window entries go to the task the grouping now sends each
key to, and the panes of the whole run equal those of a run that never rescaled.
A windowed bolt fed by a shuffle grouping (its windows are per task, not per key)
is refused with the fix, and its state is left as it was.
"""

from __future__ import annotations

import dataclasses
import json
import random
import sys
from pathlib import Path
from typing import Any

import pytest
import redis

FIXTURES = Path(__file__).parent / "spark_fixtures"
sys.path.insert(0, str(FIXTURES))

import rescalewindows as topo

from stormshift.adapters.routing import hash_one
from stormshift.engines.spark import SparkEngine
from stormshift.errors import StateError
from stormshift.state import keys as K
from stormshift.state.final import committed_attributes
from stormshift.topology.loader import load_topology

pytestmark = [pytest.mark.spark, pytest.mark.redis]


def _write(folder: Path, n: int = 240, seed: int = 7) -> None:
    """Event times rising about 1 ms a line, up to 15 ms out of order (a few late ones)."""
    rng = random.Random(seed)
    folder.mkdir()
    with (folder / "part-000.jsonl").open("w") as fh:
        for i in range(n):
            t = max(0, i - rng.choice([0, 0, 0, 2, 15]))
            fh.write(json.dumps({"n": i, "key": f"k{i % 13}", "t": t}) + "\n")


def _run(topology: Any, spark: Any, redis_url: str, namespace: str, where: Path,
         batches: int | None = None) -> Any:
    graph = load_topology(topology, overrides={"jsonlines.path": str(where / "in")})
    # the same topology at another par: one name (a state namespace belongs to its topology)
    graph = dataclasses.replace(graph, name=graph.name.rstrip("23"))
    summary = SparkEngine(graph, checkpoint_dir=str(where / "ck"), redis_url=redis_url,
                          spark=spark, namespace=namespace, batch_max_tuples=30,
                          until_done=batches is None).run(max_batches=batches)
    problems = [k.headline() for k in summary.problems.kinds()]
    assert not problems, problems
    return summary


def _panes(summary: Any) -> list[list[Any]]:
    """The panes of every batch on the run's checkpoint (a run reads its whole jsonl sink
    back, so a resumed run's summary holds the earlier runs' panes too)."""
    return sorted(list(v) for v in summary.output("windows", "default"))


def _windows(redis_url: str, namespace: str, where: Path, par: int) -> list[Any]:
    r = redis.Redis.from_url(redis_url)
    key = (where / "ck" / "stormshift-state.key").read_text().strip().encode()
    return [committed_attributes(r, namespace, key, "windows", t).get("windowing_state")
            for t in range(par)]


def test_a_windowed_bolt_rescaled_from_2_to_3_tasks_fires_the_same_panes(
        spark, redis_url, namespace, tmp_path) -> None:
    once, twice = tmp_path / "once", tmp_path / "twice"
    for where in (once, twice):
        where.mkdir()
        _write(where / "in")
    want = _panes(_run(topo.ByKey2, spark, redis_url, namespace + "-once", once))
    assert len(want) > 13 and any(p[3] == "late" for p in want)
    first = _run(topo.ByKey2, spark, redis_url, namespace, twice, batches=3)
    assert first.stop_reason == "max_batches"
    before = _windows(redis_url, namespace, twice, 2)
    assert all(ws is not None and ws.windower.windows for ws in before)  # windows open
    middle = _run(topo.ByKey3, spark, redis_url, namespace, twice, batches=1)
    after = _windows(redis_url, namespace, twice, 3)
    for task, ws in enumerate(after):
        keys = list(ws.windower.keys.values())
        assert keys and all(hash_one(k) % 3 == task for k in keys), task
    rest = _run(topo.ByKey3, spark, redis_url, namespace, twice)
    assert len(_panes(first)) <= len(_panes(middle)) < len(want)  # it did stop part way
    assert _panes(rest) == want
    r = redis.Redis.from_url(redis_url)
    assert int(r.hget(K.par_key(namespace), "windows")) == 3
    assert all(not ws.windower.windows for ws in _windows(redis_url, namespace, twice, 3))


def test_a_windowed_bolt_not_grouped_by_fields_is_refused_and_left_as_it_was(
        spark, redis_url, namespace, tmp_path) -> None:
    _write(tmp_path / "in")
    _run(topo.Shuffled2, spark, redis_url, namespace, tmp_path, batches=3)
    before = [ws.snapshot() for ws in _windows(redis_url, namespace, tmp_path, 2)]
    assert any(s["windows"]["windows"] for s in before)
    with pytest.raises(StateError, match=r"par=2.*par=3.*grouped by shuffle.*windowed bolt"
                                         r".*Grouping.fields"):
        _run(topo.Shuffled3, spark, redis_url, namespace, tmp_path)
    assert [ws.snapshot() for ws in _windows(redis_url, namespace, tmp_path, 2)] == before
    r = redis.Redis.from_url(redis_url)
    assert int(r.hget(K.par_key(namespace), "windows")) == 2
