"""Bolts of the conformance project, one Storm feature each (see each class).

Leaf bolts emit on streams nobody subscribes to, so both engines report what they emitted
(``RunSummary.output``). A bolt that reports its task does so by *index* among its
component's tasks (0, 1, ...), the number Storm's routing promises something about.
"""

from __future__ import annotations

from collections import Counter

from streamparse import BatchingBolt, Bolt, Stream


def task_index(ctx):
    """This task's index among its component's tasks (Storm's task ids are global)."""
    mine = sorted(int(t) for t, c in ctx["task->component"].items() if c == ctx["componentid"])
    return mine.index(int(ctx["taskid"]))


class Seen(Bolt):
    """Leaf: emits (task index, n) on ``seen`` for every tuple it gets."""

    outputs = [Stream(["task", "n"], "seen")]

    def initialize(self, conf, ctx):
        self.index = task_index(ctx)

    def process(self, tup):
        self.emit([self.index, tup.values[0]], stream="seen")


class Director(Bolt):
    """Named and direct streams: n goes to ``direct_seen`` task n % 2 on the direct stream,
    and to ``odd`` or ``even`` by parity."""

    outputs = [Stream(["n", "key"], "direct", direct=True), Stream(["n"], "odd"),
               Stream(["n"], "even")]

    def initialize(self, conf, ctx):
        self.targets = sorted(int(t) for t, c in ctx["task->component"].items()
                              if c == "direct_seen")

    def process(self, tup):
        n = tup.values[0]
        self.emit([n, tup.values[1]], stream="direct", direct_task=self.targets[n % 2])
        self.emit([n], stream="odd" if n % 2 else "even")


class Buffer(BatchingBolt):
    """BatchingBolt: groups by key, flushes on ticks, emits (key, count in group, sum)."""

    outputs = ["key", "count", "sum"]
    ticks_between_batches = 1

    def group_key(self, tup):
        return tup.values[1]

    def process_batch(self, key, tups):
        self.emit([key, len(tups), sum(t.values[0] for t in tups)])


class TickBucket(Bolt):
    """A legacy tick bolt: sums n per key in memory, emits (key, sum) and forgets on a tick."""

    outputs = ["key", "sum"]

    def initialize(self, conf, ctx):
        self.bucket = Counter()

    def process(self, tup):
        self.bucket[tup.values[1]] += tup.values[0]

    def process_tick(self, tup):
        for key, total in sorted(self.bucket.items()):
            self.emit([key, total])
        self.bucket.clear()


class Splitter(Bolt):
    """Anchoring: emits (n, "x") and (n, "y") anchored to the input (streamparse's
    auto_anchor), so a fail downstream fails the spout tuple's tree."""

    outputs = ["n", "part"]

    def process(self, tup):
        self.emit([tup.values[0], "x"])
        self.emit([tup.values[0], "y"])


class Checker(Bolt):
    """Leaf: ``self.fail(tup)`` for part "y" of every n % 5 == 0, else emits (n, part)."""

    outputs = ["n", "part"]

    def process(self, tup):
        n, part = tup.values
        if part == "y" and n % 5 == 0:
            self.fail(tup)
            return
        self.emit([n, part])


class Poison(Bolt):
    """Leaf: raises on every n % 11 == 3 (a poison tuple), else emits (n, key)."""

    outputs = ["n", "key"]

    def process(self, tup):
        n, key = tup.values
        if n % 11 == 3:
            raise ValueError(f"poison tuple {n}")
        self.emit([n, key])


class KeySum(Bolt):
    """Snapshot state: a running sum per key in a Counter attribute; emits (key, sum)."""

    outputs = ["key", "total"]

    def initialize(self, conf, ctx):
        self.sums = Counter()

    def process(self, tup):
        n, key = tup.values
        self.sums[key] += n
        self.emit([key, self.sums[key]])
