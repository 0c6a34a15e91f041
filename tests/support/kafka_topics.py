"""Kafka topics the KafkaSpout tests fill on the tansu broker, and their topology: records
``{"n": n, "key": key_of(n)}`` numbered across partitions (tests/test_kafka.py's module doc)."""

from __future__ import annotations

import json
import sys
import uuid
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "spark_fixtures"))

import kafkatopo
import maxtopo

from stormshift.spouts.kafka import partition_name
from support.kafka_broker import TansuBroker


def topic_name(tag: str) -> str:
    return f"{tag}-{uuid.uuid4().hex[:8]}"


def value(n: int) -> bytes:
    return json.dumps({"n": n, "key": maxtopo.key_of(n)}).encode()


def fill(broker: TansuBroker, topic: str, sizes: list[int], first: int = 0) -> dict[str, list[int]]:
    """``sizes[p]`` records in partition ``p``, numbered from ``first``; ``{name: [n...]}``."""
    broker.create_topic(topic, len(sizes))
    parts: dict[str, list[int]] = {}
    n = first
    records = []
    for p, size in enumerate(sizes):
        parts[partition_name(topic, p)] = list(range(n, n + size))
        records += [(p, None, value(x)) for x in range(n, n + size)]
        n += size
    broker.produce(topic, records)
    return parts


def kafka_graph(broker: TansuBroker, topic: str, **conf: Any) -> Any:
    from stormshift.topology.loader import load_topology

    return load_topology(kafkatopo.Kafka, overrides={
        "kafka.bootstrap_servers": broker.bootstrap, "kafka.topics": [topic], **conf})


SIZES = [9, 14, 5, 11]  # task 0: partitions 0 and 2 (14 records), task 1: 1 and 3 (25)
