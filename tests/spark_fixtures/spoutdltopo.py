"""Topologies of tests/test_spout_deadletters.py: the three built-in spouts, each declaring
``(word, n)``, feeding one fields-grouped counter whose leaf stream is compared across the
engines. Records a spout cannot emit (NaN, Infinity, wrong arity, undecodable) must be
dead-lettered at the spout on both engines alike."""

from __future__ import annotations

from collections import Counter

from streamparse import Bolt, Grouping, Topology

from stormshift.spouts import JsonLinesSpout, KafkaSpout, RedisStreamSpout


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


class WordEntries(RedisStreamSpout):
    outputs = ["word", "n"]


class WordRecords(KafkaSpout):
    outputs = ["word", "n"]


class Lines(Topology):
    config = {"jsonlines.fields": ["word", "n"], "jsonlines.bounded": True}
    words = WordLines.spec(par=2)
    count = WordCount.spec(inputs={words: Grouping.fields("word")}, par=2)


class Entries(Topology):
    config = {"redis_streams.json_fields": ["word", "n"], "redis_streams.bounded": True}
    words = WordEntries.spec(par=2)
    count = WordCount.spec(inputs={words: Grouping.fields("word")}, par=2)


class Records(Topology):
    config = {"kafka.value_format": "json", "kafka.json_fields": ["word", "n"],
              "kafka.bounded": True}
    words = WordRecords.spec(par=2)
    count = WordCount.spec(inputs={words: Grouping.fields("word")}, par=2)
