"""Topologies of tests/test_spout_deadletters.py: the three built-in spouts, each declaring
``(word, n)``, feeding one fields-grouped counter whose leaf stream is compared across the
engines. Records a spout cannot emit (NaN, Infinity, wrong arity, undecodable) must be
dead-lettered at the spout on both engines alike."""

from __future__ import annotations

from spoutdl_lines import Lines, WordCount, WordLines
from streamparse import Grouping, Topology

from stormshift.spouts import KafkaSpout, RedisStreamSpout

__all__ = ["Entries", "Lines", "Records", "WordCount", "WordLines"]


class WordEntries(RedisStreamSpout):
    outputs = ["word", "n"]


class WordRecords(KafkaSpout):
    outputs = ["word", "n"]


class Entries(Topology):
    config = {"redis_streams.json_fields": ["word", "n"], "redis_streams.bounded": True}
    words = WordEntries.spec(par=2)
    count = WordCount.spec(inputs={words: Grouping.fields("word")}, par=2)


class Records(Topology):
    config = {"kafka.value_format": "json", "kafka.json_fields": ["word", "n"],
              "kafka.bounded": True}
    words = WordRecords.spec(par=2)
    count = WordCount.spec(inputs={words: Grouping.fields("word")}, par=2)
