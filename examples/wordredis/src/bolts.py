"""Two ways to count words: in the bolt's memory, or in a Redis sorted set all tasks share."""

import redis
from collections import Counter

from streamparse import Bolt


class WordCountBolt(Bolt):
    """Running count per word in a Counter (needs every occurrence of a word on one task)."""

    outputs = ["word", "count"]

    def initialize(self, conf, ctx):
        self.counts = Counter()
        self.words_seen = 0

    def process(self, tup):
        word = tup.values[0]
        self.counts[word] += 1
        self.words_seen += 1
        if self.words_seen % 5000 == 0:
            self.logger.info("%d words so far", self.words_seen)
        self.emit([word, self.counts[word]])


class RedisWordCountBolt(Bolt):
    """Running count per word with ZINCRBY on one sorted set, so any task may count any word."""

    outputs = ["word", "count"]

    def initialize(self, conf, ctx):
        url = conf.get("wordredis.redis_url", "redis://127.0.0.1:6379/0")
        self.redis = redis.Redis.from_url(url)
        self.zset = conf.get("wordredis.zset", "wordredis:counts")
        self.words_seen = 0

    def process(self, tup):
        word = tup.values[0]
        count = self.redis.zincrby(self.zset, 1, word)
        self.words_seen += 1
        self.emit([word, int(count)])
