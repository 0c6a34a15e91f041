"""Produce pixel records to Kafka: ``python src/produce.py --bootstrap 127.0.0.1:9092 -n 10000``.

Creates the topic (``--partitions``, default 4) when it is missing. Records are
deterministic (``--seed``), so ``--expected`` prints the counts per URL a run over
exactly these records must end with.
"""

from __future__ import annotations

import argparse
import json
import random
from collections import Counter

URLS = [f"/page/{i}" for i in range(12)]


def pixels(n: int, seed: int) -> list[dict[str, object]]:
    rng = random.Random(seed)
    return [{"ip": f"10.0.{rng.randrange(256)}.{rng.randrange(256)}", "url": rng.choice(URLS),
             "ts": 1_700_000_000_000 + i * 37} for i in range(n)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--bootstrap", default="127.0.0.1:9092")
    parser.add_argument("--topic", default="pixels")
    parser.add_argument("--partitions", type=int, default=4)
    parser.add_argument("-n", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--expected", action="store_true", help="print the counts per URL, produce nothing")
    args = parser.parse_args()
    records = pixels(args.n, args.seed)
    if args.expected:
        print(json.dumps(dict(sorted(Counter(str(p["url"]) for p in records).items())), indent=1))
        return
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": args.bootstrap})
    if args.topic not in admin.list_topics(timeout=10).topics:
        admin.create_topics([NewTopic(args.topic, args.partitions, 1)])[args.topic].result(15)
    # each partition's last record in a produce batch of its own: exact end offsets on every
    # broker (tansu reports the base offset of a partition's last batch + 1)
    producer = Producer({"bootstrap.servers": args.bootstrap, "linger.ms": 20})
    last = {i % args.partitions: i for i in range(len(records))}
    for i, pixel in enumerate(records):
        if last[i % args.partitions] != i:
            producer.produce(args.topic, value=json.dumps(pixel).encode(), partition=i % args.partitions)
    producer.flush(60)
    for i in sorted(last.values()):
        producer.produce(args.topic, value=json.dumps(records[i]).encode(), partition=i % args.partitions)
        producer.flush(60)
    print(f"produced {len(records)} pixels to {args.topic} ({args.partitions} partitions)")


if __name__ == "__main__":
    main()
