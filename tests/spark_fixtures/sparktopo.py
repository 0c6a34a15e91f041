"""Small streamparse topologies for the Spark engine tests (bounded spouts).

Every leaf bolt emits on an unsubscribed stream, so what it saw lands in the
engine's sink and can be compared with what the spout sent.
"""

from __future__ import annotations

from collections import Counter

from streamparse import BatchingBolt, Bolt, Grouping, Spout, Stream, Topology

N_NUMBERS = 60


class NumberSpout(Spout):
    """Emits (n, key) for n in 0..N-1, key = n % 7, then ends (StopIteration)."""

    outputs = ["n", "key"]

    def initialize(self, conf, ctx):
        self.next_n = 0
        self.limit = int(conf.get("numbers.limit", N_NUMBERS))

    def next_tuple(self):
        if self.next_n >= self.limit:
            raise StopIteration
        n = self.next_n
        self.next_n += 1
        self.emit([n, f"k{n % 7}"], tup_id=n)


class Seen(Bolt):
    """Leaf: emits (task index, n) for every tuple it gets."""

    outputs = [Stream(["task", "n"], "seen")]

    def initialize(self, conf, ctx):
        self.index = sorted(int(t) for t, c in ctx["task->component"].items()
                            if c == ctx["componentid"]).index(int(ctx["taskid"]))

    def process(self, tup):
        self.emit([self.index, tup.values[0]], stream="seen")


class Director(Bolt):
    """Routes n to consumer task n % 2 on a direct stream; odds/evens on named streams."""

    outputs = [Stream(["n", "key"], "direct", direct=True), Stream(["n"], "odd"), Stream(["n"], "even")]

    def initialize(self, conf, ctx):
        tasks = sorted(int(t) for t, c in ctx["task->component"].items() if c == "direct_seen")
        self.targets = tasks

    def process(self, tup):
        n = tup.values[0]
        self.emit([n, tup.values[1]], stream="direct", direct_task=self.targets[n % 2])
        self.emit([n], stream="odd" if n % 2 else "even")


class Groupings(Topology):
    numbers = NumberSpout.spec(par=1)
    fields_seen = Seen.spec(inputs={numbers: Grouping.fields("key")}, par=3)
    shuffle_seen = Seen.spec(inputs={numbers: Grouping.SHUFFLE}, par=2)
    all_seen = Seen.spec(inputs={numbers: Grouping.ALL}, par=2)
    global_seen = Seen.spec(inputs={numbers: Grouping.GLOBAL}, par=2)
    none_seen = Seen.spec(inputs={numbers: Grouping.NONE}, par=2)
    director = Director.spec(inputs={numbers: Grouping.SHUFFLE}, par=2)
    local_seen = Seen.spec(inputs={director["even"]: Grouping.LOCAL_OR_SHUFFLE}, par=2)
    direct_seen = Seen.spec(inputs={director["direct"]: Grouping.DIRECT}, par=2)
    odd_seen = Seen.spec(inputs={director["odd"]: Grouping.SHUFFLE}, par=1)


class KeySum(Bolt):
    """Stateful: running sum per key; emits (key, sum). Raises on n == POISON."""

    outputs = ["key", "total"]
    POISON = 13

    def initialize(self, conf, ctx):
        self.sums = Counter()

    def process(self, tup):
        n, key = tup.values
        if n == self.POISON:
            raise ValueError(f"poison tuple {n}")
        self.sums[key] += n
        self.emit([key, self.sums[key]])


class Doubler(Bolt):
    outputs = ["n", "key"]

    def process(self, tup):
        self.emit([tup.values[0] * 2, tup.values[1]])


class Join(Bolt):
    """Joins the two inputs by key: counts per key and per source, emits (key, a, b)."""

    outputs = ["key", "a", "b"]

    def initialize(self, conf, ctx):
        self.a = Counter()
        self.b = Counter()

    def process(self, tup):
        key = tup.values[1]
        (self.a if tup.component == "numbers" else self.b)[key] += 1
        self.emit([key, self.a[key], self.b[key]])


class Stateful(Topology):
    numbers = NumberSpout.spec(par=1)
    sums = KeySum.spec(inputs={numbers: Grouping.fields("key")}, par=2)
    doubler = Doubler.spec(inputs={numbers: Grouping.SHUFFLE}, par=1)
    join = Join.spec(inputs={numbers: Grouping.fields("key"), doubler: Grouping.fields("key")}, par=2)


class Buffer(BatchingBolt):
    """Batches per key; flushes on ticks, emits (key, count in batch, sum)."""

    outputs = ["key", "count", "sum"]
    ticks_between_batches = 1

    def group_key(self, tup):
        return tup.values[1]

    def process_batch(self, key, tups):
        self.emit([key, len(tups), sum(t.values[0] for t in tups)])


class Ticking(Topology):
    config = {"topology.tick.tuple.freq.secs": 1}
    numbers = NumberSpout.spec(par=1)
    buffer = Buffer.spec(inputs={numbers: Grouping.fields("key")}, par=2)


from stormshift.spouts.jsonlines import JsonLinesSpout


class NumberLines(JsonLinesSpout):
    """Replayable: lines {"n": .., "key": ..} from ``jsonlines.path``."""

    outputs = ["n", "key"]


class Replayable(Topology):
    config = {"jsonlines.fields": ["n", "key"], "jsonlines.bounded": True}
    numbers = NumberLines.spec(par=1)
    sums = KeySum.spec(inputs={numbers: Grouping.fields("key")}, par=2)


class LocalReplay(Topology):
    """Spout and a shuffle-grouped head of the same par: the head runs on the source's
    partitions, spout task i feeding head task i (``layout`` doc); ``sums`` reads the
    same spout with a fields grouping, through a shuffle."""

    config = {"jsonlines.fields": ["n", "key"], "jsonlines.bounded": True}
    numbers = NumberLines.spec(par=2)
    seen = Seen.spec(inputs={numbers: Grouping.SHUFFLE}, par=2)
    sums = KeySum.spec(inputs={numbers: Grouping.fields("key")}, par=2)


class ReadLocally(Topology):
    """The spout's only consumer runs on its partitions (same par, shuffle): each doubler
    task reads its spout task's file range itself (``spoutrange``); sums are fields-grouped."""

    config = {"jsonlines.fields": ["n", "key"], "jsonlines.bounded": True}
    numbers = NumberLines.spec(par=2)
    doubler = Doubler.spec(inputs={numbers: Grouping.SHUFFLE}, par=2)
    sums = KeySum.spec(inputs={doubler: Grouping.fields("key")}, par=2)


class Replayable3(Topology):
    """``Replayable`` rescaled: ``sums`` at par 3 (its Counter state is re-split)."""

    config = {"jsonlines.fields": ["n", "key"], "jsonlines.bounded": True}
    numbers = NumberLines.spec(par=1)
    sums = KeySum.spec(inputs={numbers: Grouping.fields("key")}, par=3)


class Shuffled(Topology):
    """Per-key sums on a shuffle grouping: a key's sum is spread over tasks."""

    config = {"jsonlines.fields": ["n", "key"], "jsonlines.bounded": True}
    numbers = NumberLines.spec(par=1)
    sums = KeySum.spec(inputs={numbers: Grouping.SHUFFLE}, par=2)


class Shuffled3(Topology):
    config = {"jsonlines.fields": ["n", "key"], "jsonlines.bounded": True}
    numbers = NumberLines.spec(par=1)
    sums = KeySum.spec(inputs={numbers: Grouping.SHUFFLE}, par=3)


class Shift(Bolt):
    """Emits each number under the NEXT key: other keys than it is given."""

    outputs = ["n", "key"]

    def process(self, tup):
        n = tup.values[0]
        self.emit([n, f"k{(n + 1) % 7}"])


class KeyedMismatch(Topology):
    """``sums`` opted in to keyed fusion behind ``shift``, whose emits change the key: the
    runtime check fails the batch (``task/output.py``)."""

    config = {"stormshift.fuse.keyed": ["sums"]}
    numbers = NumberSpout.spec(par=1)
    shift = Shift.spec(inputs={numbers: Grouping.fields("key")}, par=2)
    sums = KeySum.spec(inputs={shift: Grouping.fields("key")}, par=2)
