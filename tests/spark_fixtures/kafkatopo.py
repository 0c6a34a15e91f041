"""Topologies of tests/test_kafka.py: maxtopo's bolts fed by a KafkaSpout.

Every record's value is ``{"n": n, "key": "k{n % 7}"}``; ``seen`` emits each ``n``
it gets, ``counts`` counts per key (a snapshotted Counter).
"""

from __future__ import annotations

from maxtopo import CountPerKey, Seen
from streamparse import Grouping, Topology

from stormshift.spouts import KafkaSpout


class Numbers(KafkaSpout):
    outputs = ["n", "key"]


class Kafka(Topology):
    config = {"kafka.value_format": "json", "kafka.json_fields": ["n", "key"]}
    numbers = Numbers.spec(par=2)
    seen = Seen.spec(inputs={numbers: Grouping.SHUFFLE}, par=2)
    counts = CountPerKey.spec(inputs={numbers: Grouping.fields("key")}, par=2)
