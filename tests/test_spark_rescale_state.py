"""A legacy bolt's dict state survives a change of par on the Spark engine.

A fields-grouped counting bolt runs at par 2, stops part way, and the same
topology comes back at par 3 on the same checkpoint: its ``Counter`` is
re-split by the routing hash, and the totals at the end of the input are exact. A bolt whose state
cannot be split (shuffle grouping) is refused with the fix, and nothing moves.
"""

from __future__ import annotations

import dataclasses
import json
import sys
from collections import Counter
from pathlib import Path

import pytest
import redis

FIXTURES = Path(__file__).parent / "spark_fixtures"
sys.path.insert(0, str(FIXTURES))

import sparktopo

from stormshift.adapters.routing import hash_one
from stormshift.engines.spark import SparkEngine
from stormshift.errors import StateError
from stormshift.state import keys as K
from stormshift.state.final import committed_attributes
from stormshift.topology.loader import load_topology

pytestmark = [pytest.mark.spark, pytest.mark.redis]


def _write(data: Path, part: int, numbers: range) -> Counter:
    """One input file; returns the sums KeySum should add (13 is its poison tuple)."""
    want: Counter = Counter()
    with (data / f"part-{part:03d}.jsonl").open("w") as fh:
        for n in numbers:
            if n == sparktopo.KeySum.POISON:
                continue
            key = f"k{n % 11}"
            fh.write(json.dumps({"n": n, "key": key}) + "\n")
            want[key] += n
    return want


def _run(topology, spark, redis_url, namespace, tmp_path, batches=None):
    """Until the input ends, or ``batches`` batches (then stopped: a restart follows)."""
    graph = load_topology(topology, overrides={"jsonlines.path": str(tmp_path / "in")})
    # the same topology at another par: one name (a state namespace belongs to its topology)
    graph = dataclasses.replace(graph, name=graph.name.rstrip("23"))
    return SparkEngine(graph, checkpoint_dir=str(tmp_path / "ck"), redis_url=redis_url,
                       spark=spark, namespace=namespace, batch_max_tuples=25,
                       until_done=batches is None).run(max_batches=batches)


def _sums(redis_url, namespace, tmp_path, par):
    r = redis.Redis.from_url(redis_url)
    key = (tmp_path / "ck" / "stormshift-state.key").read_text().strip().encode()
    return [committed_attributes(r, namespace, key, "sums", t).get("sums", Counter())
            for t in range(par)]


def test_a_counting_bolt_rescaled_from_2_to_3_tasks_keeps_exact_totals(
        spark, redis_url, namespace, tmp_path):
    (tmp_path / "in").mkdir()
    want = _write(tmp_path / "in", 0, range(150))
    first = _run(sparktopo.Replayable, spark, redis_url, namespace, tmp_path, batches=2)
    assert first.stop_reason == "max_batches"
    before = _sums(redis_url, namespace, tmp_path, 2)
    assert all(before) and sum(before, Counter()) != want  # stopped part way, both tasks hold keys
    _run(sparktopo.Replayable3, spark, redis_url, namespace, tmp_path)
    after = _sums(redis_url, namespace, tmp_path, 3)
    for task, sums in enumerate(after):
        assert sums and all(hash_one(k) % 3 == task for k in sums), task
    assert sum(after, Counter()) == want  # every key once, on its new task, exact
    r = redis.Redis.from_url(redis_url)
    assert int(r.hget(K.par_key(namespace), "sums")) == 3


def test_state_that_cannot_be_resplit_is_refused_with_the_fix(
        spark, redis_url, namespace, tmp_path):
    (tmp_path / "in").mkdir()
    _write(tmp_path / "in", 0, range(100))
    _run(sparktopo.Shuffled, spark, redis_url, namespace, tmp_path, batches=2)
    before = _sums(redis_url, namespace, tmp_path, 2)
    with pytest.raises(StateError, match=r"par=2.*par=3.*grouped by shuffle.*keep par at 2"):
        _run(sparktopo.Shuffled3, spark, redis_url, namespace, tmp_path)
    assert _sums(redis_url, namespace, tmp_path, 2) == before  # nothing moved
