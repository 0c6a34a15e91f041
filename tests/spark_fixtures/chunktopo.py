"""Topologies for the executor-side spout tests (``tests/test_exec_spout.py``).

``Counting``: task ``i`` emits ``i * STRIDE + j`` (msg id the same) for ``j < chunk.limit``,
``chunk.per_call`` tuples per ``next_tuple``, then raises StopIteration. ``Seeking``: the
same with a ``resume(last_msg_id)`` hook. ``Random``: msg ids no second instance repeats.
"""

from __future__ import annotations

import uuid

from streamparse import Bolt, Grouping, Spout, Topology

from stormshift.spouts.base import task_position

STRIDE = 1_000_000
STATS = {"next_tuple": 0, "acked": [], "resumed": []}


class CountingSpout(Spout):
    outputs = ["n"]

    def initialize(self, conf, ctx):
        index, _ = task_position(ctx)
        self.base = index * STRIDE
        self.limit = int(conf.get("chunk.limit", 1000))
        self.per_call = int(conf.get("chunk.per_call", 1))
        self.j = 0

    def next_tuple(self):
        STATS["next_tuple"] += 1
        if self.j >= self.limit:
            raise StopIteration
        for _ in range(min(self.per_call, self.limit - self.j)):
            n = self.base + self.j
            self.j += 1
            self.emit([n], tup_id=n)

    def ack(self, tup_id):
        STATS["acked"].append(tup_id)


class SeekingSpout(CountingSpout):
    def resume(self, last_msg_id):
        STATS["resumed"].append(last_msg_id)
        self.j = last_msg_id - self.base + 1


class RandomSpout(Spout):
    outputs = ["n"]

    def initialize(self, conf, ctx):
        self.j = 0

    def next_tuple(self):
        if self.j >= 1000:
            raise StopIteration
        self.j += 1
        self.emit([self.j], tup_id=uuid.uuid4().hex)


class Sink(Bolt):
    def process(self, tup):
        pass


class Counting(Topology):
    config = {"stormshift.spout.executor": True}
    numbers = CountingSpout.spec(par=2)
    sink = Sink.spec(inputs={numbers: Grouping.SHUFFLE}, par=1)


class Seeking(Topology):
    config = {"stormshift.spout.executor": True}
    numbers = SeekingSpout.spec(par=1)
    sink = Sink.spec(inputs={numbers: Grouping.SHUFFLE}, par=1)


class Random(Topology):
    config = {"stormshift.spout.executor": True}
    numbers = RandomSpout.spec(par=1)
    sink = Sink.spec(inputs={numbers: Grouping.SHUFFLE}, par=1)
