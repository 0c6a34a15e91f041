"""The JSON-lines topology of tests/test_spout_deadletters.py on its own (one topology per
file: the fault harness runs it as ``stormshift run FILE``): ``(word, n)`` lines feeding a
fields-grouped counter whose leaf stream is ``(word, count, total)``."""

from __future__ import annotations

from collections import Counter

from streamparse import Bolt, Grouping, Topology

from stormshift.spouts import JsonLinesSpout


class WordCount(Bolt):
    """Per word: tuples seen and the sum of ``n``; emits ``(word, count, total)``."""

    outputs = ["word", "count", "total"]

    def initialize(self, conf, ctx):
        self.counts = Counter()
        self.totals = Counter()

    def process(self, tup):
        word, n = tup.values
        self.counts[word] += 1
        self.totals[word] += n
        self.emit([word, self.counts[word], self.totals[word]])


class WordLines(JsonLinesSpout):
    outputs = ["word", "n"]


class Lines(Topology):
    config = {"jsonlines.fields": ["word", "n"], "jsonlines.bounded": True}
    words = WordLines.spec(par=2)
    count = WordCount.spec(inputs={words: Grouping.fields("word")}, par=2)
