"""What the per-source lag costs: ``replay_lag(end)`` against the batch plan it follows.

The Spark engine's planner calls ``replay_plan(start, budgets)`` for every batch and then
``replay_lag(end)`` (``stormshift/spouts/lag.py``) once, so the lag's cost is best read
as a share of the plan's. For each replayable source kind, in one process, with real
backends: JSON lines (``--files`` files of ``--lines`` lines), Redis Streams (``--files``
streams of ``--lines`` entries in ``REDIS_URL``, the default ``redis_streams.lag_cap``)
and, with ``--kafka``, Kafka (a tansu broker on loopback, tests/kafka_broker.py; ``--files``
partitions). Each round plans ``--budget`` records per task from a moving start, then
measures the lag at the planned end; plan and lag alternate. Prints the median µs of each
and the ratio lag / plan per source.

    python bench/source_lag_cost.py [--files 4] [--lines 100000] [--budget 5000] \
        [--rounds 40] [--kafka]
"""

from __future__ import annotations

import argparse
import io
import json
import os
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

REDIS_URL = os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/0")
PAR = 2


def make(cls: Any, conf: dict[str, Any]) -> Any:
    spout = cls(input_stream=io.BytesIO(), output_stream=io.BytesIO(), rdb_signal=None)
    spout.initialize(conf, {"taskid": 1, "componentid": "s",
                            "task->component": {str(1 + i): "s" for i in range(PAR)}})
    return spout


def measure(name: str, spout: Any, rounds: int, budget: int) -> None:
    start = spout.replay_initial_offsets()
    plan_us, lag_us = [], []
    lag = None
    for _ in range(rounds):
        t0 = time.perf_counter()
        end, took = spout.replay_plan(start, [budget] * PAR)
        t1 = time.perf_counter()
        lag = spout.replay_lag(end)
        t2 = time.perf_counter()
        plan_us.append((t1 - t0) * 1e6)
        lag_us.append((t2 - t1) * 1e6)
        start = end if sum(took) else spout.replay_initial_offsets()  # wrap at the end
    plan, cost = statistics.median(plan_us), statistics.median(lag_us)
    print(f"{name:12s} plan {plan:10,.0f} µs   lag {cost:10,.0f} µs   lag/plan {cost / plan:.3f}"
          f"   (last lag {list(lag.records) if lag else None}, capped "
          f"{list(lag.capped) if lag else None})")


def jsonlines(args: argparse.Namespace, root: Path) -> Any:
    from stormshift.spouts import JsonLinesSpout

    for f in range(args.files):
        with (root / f"p{f}.jsonl").open("w") as fh:
            for n in range(args.lines):
                fh.write(json.dumps({"n": n, "key": f"k{n % 7}"}) + "\n")
    return make(JsonLinesSpout, {"jsonlines.path": str(root), "jsonlines.fields": ["n", "key"]})


def redis_streams(args: argparse.Namespace) -> tuple[Any, list[str]]:
    import redis

    from stormshift.spouts import RedisStreamSpout

    r = redis.Redis.from_url(REDIS_URL)
    keys = [f"bench-lag-{uuid.uuid4().hex[:8]}:{f}" for f in range(args.files)]
    for key in keys:
        pipe = r.pipeline(transaction=False)
        for n in range(args.lines):
            pipe.xadd(key, {"payload": json.dumps({"n": n, "key": f"k{n % 7}"})})
            if n % 5000 == 4999:
                pipe.execute()
        pipe.execute()
    spout = make(RedisStreamSpout, {"redis_streams.url": REDIS_URL, "redis_streams.keys": keys,
                                    "redis_streams.json_fields": ["n", "key"]})
    return spout, keys


def kafka(args: argparse.Namespace) -> tuple[Any, Any]:
    from kafka_broker import TansuBroker

    from stormshift.spouts import KafkaSpout

    broker = TansuBroker()
    topic = f"bench-lag-{uuid.uuid4().hex[:8]}"
    broker.create_topic(topic, args.files)
    for p in range(args.files):
        broker.produce(topic, [(p, None, json.dumps({"n": n}).encode())
                               for n in range(args.lines)])
    spout = make(KafkaSpout, {"kafka.bootstrap_servers": broker.bootstrap,
                              "kafka.topics": [topic]})
    return spout, broker


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--files", type=int, default=4)
    parser.add_argument("--lines", type=int, default=100_000)
    parser.add_argument("--budget", type=int, default=5_000)
    parser.add_argument("--rounds", type=int, default=40)
    parser.add_argument("--kafka", action="store_true")
    args = parser.parse_args()
    print(f"{args.files} partitions x {args.lines:,} records, {PAR} tasks, "
          f"budget {args.budget:,} per task, {args.rounds} rounds")
    with tempfile.TemporaryDirectory() as tmp:
        measure("jsonlines", jsonlines(args, Path(tmp)), args.rounds, args.budget)
    spout, keys = redis_streams(args)
    try:
        measure("redis", spout, args.rounds, args.budget)
    finally:
        spout.client.delete(*keys)
    if args.kafka:
        spout, broker = kafka(args)
        try:
            measure("kafka", spout, args.rounds, args.budget)
        finally:
            broker.stop()


if __name__ == "__main__":
    main()
