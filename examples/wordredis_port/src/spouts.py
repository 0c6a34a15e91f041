"""The words of a short text, in order, over and over (reliable: failed words are sent again)."""

from streamparse import Spout

TEXT = (
    "it was the best of times it was the worst of times "
    "it was the age of wisdom it was the age of foolishness"
).split()


class WordSpout(Spout):
    """Emits ``wordredis.words`` words (default 20000), then ends; replays failed ones."""

    outputs = ["word"]

    def initialize(self, stormconf, context):
        self.limit = int(stormconf.get("wordredis.words", 20000))
        self.next_index = 0
        self.failed = []

    def next_tuple(self):
        if self.failed:
            index = self.failed.pop(0)
        elif self.next_index < self.limit:
            index = self.next_index
            self.next_index += 1
        else:
            raise StopIteration
        self.emit([TEXT[index % len(TEXT)]], tup_id=index)

    def fail(self, tup_id):
        self.failed.append(tup_id)
