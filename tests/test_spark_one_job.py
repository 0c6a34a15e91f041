"""One Spark job per batch, and still every tuple processed once (``driver/batch.py`` step 3).

A batch's groups run in one DAG: an output read by two groups, or by a group
left for a later job, is persisted so that no stage runs twice; a group's Storm
tasks share at most ``cores`` Spark tasks, each with its own transaction. The
proof that no bolt ran twice on one tuple cannot come from the committed state
(a re-run would be fenced or idempotent there): the bolts below count every
``process()`` call in Redis themselves, outside any transaction, as a legacy bolt
writing to Redis would, and the counts must equal the tuples each bolt was sent.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
import redis
from streamparse import Bolt, Grouping, Stream, Topology

from stormshift.engines.spark import SparkEngine
from stormshift.spouts.jsonlines import JsonLinesSpout
from stormshift.topology.loader import load_topology

pytestmark = [pytest.mark.spark, pytest.mark.redis]

N = 600
RARE_EVERY = 250  # parse sends one tuple on "rare" per this many: most batches none


class Lines(JsonLinesSpout):
    outputs = ["n", "key"]


class Counted(Bolt):
    """Counts its own ``process()`` calls in Redis (INCR, no transaction), keeps a sum."""

    outputs = ["key", "total"]

    def initialize(self, conf: dict[str, Any], ctx: dict[str, Any]) -> None:
        self.calls = redis.Redis.from_url(conf["calls.redis"])
        self.key = f"{conf['calls.prefix']}:{ctx['componentid']}"
        self.sums: dict[str, int] = {}

    def process(self, tup: Any) -> None:
        self.calls.incr(self.key)
        n, key = tup.values[0], tup.values[1]
        self.sums[key] = self.sums.get(key, 0) + n
        self.emit([key, self.sums[key]])


class Parse(Counted):
    outputs = [Stream(["n", "key"]), Stream(["n", "key"], "rare")]

    def process(self, tup: Any) -> None:
        self.calls.incr(self.key)
        n, key = tup.values[0], tup.values[1]
        self.emit([n, key])
        if n % RARE_EVERY == RARE_EVERY - 1:
            self.emit([n, key], stream="rare")


class Joined(Counted):
    """Counts per key what parse and by_key sent it."""

    def process(self, tup: Any) -> None:
        self.calls.incr(self.key)
        key = tup.values[1] if tup.component == "parse" else tup.values[0]
        self.sums[key] = self.sums.get(key, 0) + 1
        self.emit([key, self.sums[key]])


class Fanout(Topology):
    """parse's output is read by two groups (by_key + by_n, and joined, which also reads
    by_key); ``rare`` is fed in a few batches only, so it waits for the records, except
    when it was fed the batch before."""

    config = {"jsonlines.fields": ["n", "key"], "jsonlines.bounded": True}
    lines = Lines.spec(par=2)
    parse = Parse.spec(inputs={lines: Grouping.SHUFFLE}, par=2)
    by_key = Counted.spec(inputs={parse: Grouping.fields("key")}, par=3)
    by_n = Counted.spec(inputs={parse: Grouping.fields("n")}, par=2)
    joined = Joined.spec(inputs={parse: Grouping.fields("key"), by_key: Grouping.fields("key")},
                          par=2)
    rare = Counted.spec(inputs={parse["rare"]: Grouping.fields("key")}, par=2)


def _last_job_id(spark: Any) -> int:
    """The id of a one-job RDD action run now (job ids count up: the jobs between two such
    ids are the ones run between them; the streaming query's carry its own job group)."""
    sc = spark.sparkContext
    sc.setJobGroup("one-job-probe", "probe", False)
    try:
        sc.parallelize([1], 1).count()
        return max(sc.statusTracker().getJobIdsForGroup("one-job-probe"))
    finally:
        sc.setLocalProperty("spark.jobGroup.id", None)


def test_every_bolt_processes_each_tuple_once_in_one_job_per_batch(spark, redis_url, namespace,
                                                                   tmp_path):
    data = tmp_path / "in"
    data.mkdir()
    for part in range(2):
        with (data / f"part-{part:03d}.jsonl").open("w") as fh:
            for n in range(part, N, 2):
                fh.write(json.dumps({"n": n, "key": f"k{n % 7}"}) + "\n")
    prefix = f"{namespace}:calls"
    graph = load_topology(Fanout, overrides={"jsonlines.path": str(data),
                                             "calls.redis": redis_url, "calls.prefix": prefix})
    before = _last_job_id(spark)
    engine = SparkEngine(graph, checkpoint_dir=str(tmp_path / "ck"), redis_url=redis_url,
                         spark=spark, namespace=namespace, until_done=True, batch_max_tuples=50)
    lines: list[str] = []
    summary = engine.run(on_progress=lines.append)
    jobs = _last_job_id(spark) - before - 1

    calls = redis.Redis.from_url(redis_url)
    rare = len([n for n in range(N) if n % RARE_EVERY == RARE_EVERY - 1])
    sent = {"parse": N, "by_key": N, "by_n": N, "joined": 2 * N, "rare": rare}
    for name, n in sent.items():
        assert summary[name].tuples_in == n, name
        assert int(calls.get(f"{prefix}:{name}") or 0) == n, f"{name} ran a tuple twice"
    # the state the last emits show: each key counted once from parse and once from by_key
    expected = {f"k{k}": 2 * len([n for n in range(N) if n % 7 == k]) for k in range(7)}
    assert {k: v[1] for k, v in summary.latest("joined").items()} == expected
    assert summary.total("dead_lettered") == 0
    # one job per batch, plus one for each batch that fed "rare" after a batch that did not
    batches = len([line for line in lines if " committed | " in line])
    assert batches >= N // 100
    assert batches <= jobs <= batches + rare
    # "rare" ran in the batches that fed it only (and the final one): idle in the others
    assert summary["rare"].idle_batches >= batches - rare - 2
    assert summary["parse"].idle_batches == 0  # a spout feeds it: never idle
