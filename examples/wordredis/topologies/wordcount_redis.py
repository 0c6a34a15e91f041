"""Word count, counted in Redis: any task may take any word (shuffle), Redis adds up."""

from streamparse import Topology

from bolts import RedisWordCountBolt
from spouts import WordSpout


class WordCountRedis(Topology):
    word_spout = WordSpout.spec()
    count_bolt = RedisWordCountBolt.spec(inputs=[word_spout], par=4)
