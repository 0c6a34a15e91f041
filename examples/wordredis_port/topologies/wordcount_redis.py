"""The port of ``examples/wordredis``'s Redis word count: fields grouping on the word (a
state map's key must reach one task); the same leaf stream ``count_bolt:default``."""

from streamparse import Grouping, Topology

from bolts import RedisWordCountBolt
from spouts import WordSpout


class WordCountRedis(Topology):
    word_spout = WordSpout.spec()
    count_bolt = RedisWordCountBolt.spec(inputs={word_spout: Grouping.fields("word")}, par=4)
