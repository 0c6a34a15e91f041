"""Topologies for the ``--max-tuples`` tests: one per spout kind, the same bolts.

Every tuple is ``(n, key)`` with ``key = "k{n % 7}"``; ``seen`` emits each ``n`` it
gets (so a test sees exactly which tuples the run took), ``counts`` keeps a count
per key in a Counter (a snapshotted attribute) and emits ``(key, count)``.
"""

from __future__ import annotations

from collections import Counter

from streamparse import Bolt, Grouping, Spout, Stream, Topology

from stormshift.spouts import JsonLinesSpout, RedisStreamSpout
from stormshift.spouts.base import task_position

TASK_STRIDE = 100_000


def key_of(n: int) -> str:
    return f"k{n % 7}"


class BurstSpout(Spout):
    """Task ``i`` emits ``n = i * TASK_STRIDE + j`` for ``j < maxt.limits[i]``, ``maxt.burst``
    tuples per ``next_tuple`` (msg id ``n``), then raises StopIteration."""

    outputs = ["n", "key"]

    def initialize(self, conf, ctx):
        index, _ = task_position(ctx)
        self.base = index * TASK_STRIDE
        self.limit = int(conf.get("maxt.limits", [60, 60])[index])
        self.burst = int(conf.get("maxt.burst", 1))
        self.j = 0

    def next_tuple(self):
        if self.j >= self.limit:
            raise StopIteration
        for _ in range(min(self.burst, self.limit - self.j)):
            n = self.base + self.j
            self.j += 1
            self.emit([n, key_of(n)], tup_id=n)


class Lines(JsonLinesSpout):
    outputs = ["n", "key"]


class Entries(RedisStreamSpout):
    outputs = ["n", "key"]


class Seen(Bolt):
    outputs = [Stream(["n"], "seen")]

    def process(self, tup):
        self.emit([tup.values[0]], stream="seen")


class CountPerKey(Bolt):
    outputs = ["key", "count"]

    def initialize(self, conf, ctx):
        self.counts = Counter()

    def process(self, tup):
        key = tup.values[1]
        self.counts[key] += 1
        self.emit([key, self.counts[key]])


class Generic(Topology):
    config = {"maxt.limits": [60, 60], "maxt.burst": 3}
    numbers = BurstSpout.spec(par=2)
    seen = Seen.spec(inputs={numbers: Grouping.SHUFFLE}, par=2)
    counts = CountPerKey.spec(inputs={numbers: Grouping.fields("key")}, par=2)


class JsonLines(Topology):
    config = {"jsonlines.fields": ["n", "key"], "jsonlines.bounded": True}
    numbers = Lines.spec(par=2)
    seen = Seen.spec(inputs={numbers: Grouping.SHUFFLE}, par=2)
    counts = CountPerKey.spec(inputs={numbers: Grouping.fields("key")}, par=2)


class ReadLocally(Topology):
    """``seen`` is the spout's only consumer and runs on its partitions: it reads the
    planned file ranges itself (``spoutrange``), so the cut must hold there too."""

    config = {"jsonlines.fields": ["n", "key"], "jsonlines.bounded": True}
    numbers = Lines.spec(par=2)
    seen = Seen.spec(inputs={numbers: Grouping.SHUFFLE}, par=2)


class RedisStreams(Topology):
    config = {"redis_streams.json_fields": ["n", "key"]}
    numbers = Entries.spec(par=2)
    seen = Seen.spec(inputs={numbers: Grouping.SHUFFLE}, par=2)
    counts = CountPerKey.spec(inputs={numbers: Grouping.fields("key")}, par=2)


class TwoSpouts(Topology):
    """Two generic spouts share the budget in declaration order (``first`` gets the extra one)."""

    config = {"maxt.limits": [60, 60], "maxt.burst": 2}
    first = BurstSpout.spec(par=1)
    second = BurstSpout.spec(par=2)
    seen = Seen.spec(inputs={first: Grouping.SHUFFLE, second: Grouping.SHUFFLE}, par=2)
