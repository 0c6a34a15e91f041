"""The port of ``examples/wordredis``'s Redis word count: the count per word lives in a
stormshift state map (exactly once) instead of a sorted set every task increments."""

from streamparse import Bolt

from stormshift.state import opaque_map


class RedisWordCountBolt(Bolt):
    """Running count per word in ``opaque_map("counts")``: a replayed batch is not counted
    twice. A map key must reach one task only, so the topology groups by word."""

    outputs = ["word", "count"]

    def initialize(self, conf, ctx):
        self.counts = opaque_map("counts")
        self.words_seen = 0

    def process(self, tup):
        word = tup.values[0]
        self.counts.increment(word, 1)
        self.words_seen += 1
        self.emit([word, self.counts.get(word)])
