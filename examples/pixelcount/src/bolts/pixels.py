"""The two Python bolts of streamparse's kafka-jvm example."""

import json

from streamparse import Bolt


class PixelDeserializerBolt(Bolt):
    outputs = ["ip", "url", "ts"]

    def process(self, tup):
        pixel = json.loads(tup.values.pixel)
        self.emit([pixel["ip"], pixel["url"], pixel["ts"]])


class PixelCounterBolt(Bolt):
    outputs = ["url", "count"]

    def initialize(self, conf, ctx):
        self.counts = {}

    def process(self, tup):
        url = tup.values.url
        self.counts[url] = self.counts.get(url, 0) + 1
        self.emit([url, self.counts[url]])
