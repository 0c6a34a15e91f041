"""Topologies for the stage-output tests (tests/test_spark_output.py), run without Spark.

``Encoder`` keeps a running sum per key and emits ``(key, sum)`` for every
tuple; for n == ``BAD`` it then emits a second tuple whose value is a lone
surrogate, which passes Storm's wire check (it is a str) but which msgpack
cannot encode. ``Fused`` feeds a consumer on the same task (local_or_shuffle,
same par): its emits travel in process, as chunks of one stream.
"""

from __future__ import annotations

from collections import Counter

from streamparse import Bolt, Grouping, Spout, Stream, Topology

BAD = 5


class Numbers(Spout):
    outputs = ["n", "key"]

    def next_tuple(self):
        raise StopIteration  # the tests feed the stage's rows themselves


class Encoder(Bolt):
    outputs = ["key", "total"]

    def initialize(self, conf, ctx):
        self.sums = Counter()

    def process(self, tup):
        n, key = tup.values
        self.sums[key] += n
        self.emit([key, self.sums[key]])
        if n == BAD:
            self.emit([key, "\ud800"])


class Totals(Bolt):
    outputs = ["key", "total"]

    def process(self, tup):
        self.emit(list(tup.values))


class EncodeTopo(Topology):
    numbers = Numbers.spec(par=1)
    encoder = Encoder.spec(inputs={numbers: Grouping.SHUFFLE}, par=1)
    totals = Totals.spec(inputs={encoder: Grouping.fields("key")}, par=2)


class FusedTopo(Topology):
    numbers = Numbers.spec(par=1)
    encoder = Encoder.spec(inputs={numbers: Grouping.SHUFFLE}, par=1)
    totals = Totals.spec(inputs={encoder: Grouping.LOCAL_OR_SHUFFLE}, par=1)


class KeyedTopo(Topology):
    """``totals`` fields-grouped on ``key`` behind ``encoder``, itself fields-grouped on
    ``key``: fused by key (``stormshift.fuse.keyed``)."""

    config = {"stormshift.fuse.keyed": ["totals"]}
    numbers = Numbers.spec(par=1)
    encoder = Encoder.spec(inputs={numbers: Grouping.fields("key")}, par=2)
    totals = Totals.spec(inputs={encoder: Grouping.fields("key")}, par=2)


class ShuffledKeyTopo(Topology):
    """``KeyedTopo`` with a shuffle-grouped ``encoder``: its task i holds any key."""

    numbers = Numbers.spec(par=1)
    encoder = Encoder.spec(inputs={numbers: Grouping.SHUFFLE}, par=2)
    totals = Totals.spec(inputs={encoder: Grouping.fields("key")}, par=2)


from stormshift.spouts.jsonlines import JsonLinesSpout


class NumberLines(JsonLinesSpout):
    """Replayable: lines {"n": .., "key": ..} from ``jsonlines.path``."""

    outputs = ["n", "key"]


class LinesTopo(Topology):
    """``EncodeTopo`` fed by a JSON-lines spout: the encoder reads the spout's ranges itself."""

    config = {"jsonlines.fields": ["n", "key"], "jsonlines.bounded": True}
    numbers = NumberLines.spec(par=1)
    encoder = Encoder.spec(inputs={numbers: Grouping.SHUFFLE}, par=1)
    totals = Totals.spec(inputs={encoder: Grouping.fields("key")}, par=2)


class MixedTopo(Topology):
    """The spout feeds a local head and a fields-grouped bolt: its tuples travel as rows."""

    numbers = Numbers.spec(par=1)
    encoder = Encoder.spec(inputs={numbers: Grouping.SHUFFLE}, par=1)
    totals = Totals.spec(inputs={numbers: Grouping.fields("key")}, par=2)


def encoder_rows(layout, numbers, head="encoder", task=0):
    """Spout task 0's rows for ``head``'s task ``task``, as the source sends them: a beacon,
    then one tuple ``[n, "k<n % 2>"]`` per number (record batches)."""
    import msgpack

    from stormshift.engines.spark.protocol import rows as R

    out = R.RowBuilder()
    head = layout.first_task(head) + task
    out.beacon(head)
    src = layout.graph.component("numbers").task_id(0)
    code = layout.stream_code[("numbers", "default")]
    for seq, n in enumerate(numbers):
        out.add(head, src, seq, code, msgpack.packb([n, f"k{n % 2}"]))
    return list(out.batches())


# Values of every wire type, for the compiled and pure data planes to agree on
# (``tests/test_cwire.py``): floats, None, nested lists and dicts, unicode, 64-bit ints,
# empty values.
VARIED = [
    (1.5, None), (-0.0, 1e300), ([1, [2.5, []], None], {"k": [1, None], "é": {}}),
    ("héllo ☃ 𝄞", ""), (2**63 - 1, -2**63), (2**40, -129), ([], {}), (True, False),
    ("x" * 40, "y" * 300), (0, -1),
]


class Varied(Bolt):
    """Emits ``VARIED[n % len]`` anchored on the default stream and reversed, unanchored,
    on ``side``."""

    outputs = [Stream(fields=["a", "b"]), Stream(fields=["b", "a"], name="side")]

    def process(self, tup):
        n, _key = tup.values
        a, b = VARIED[n % len(VARIED)]
        self.emit([a, b], anchors=[tup])
        self.emit((b, a), stream="side")


class VariedTopo(Topology):
    numbers = Numbers.spec(par=1)
    varied = Varied.spec(inputs={numbers: Grouping.SHUFFLE}, par=1)
    totals = Totals.spec(inputs={varied: Grouping.SHUFFLE, varied["side"]: Grouping.SHUFFLE},
                         par=2)
    last = Totals.spec(inputs={totals: Grouping.SHUFFLE}, par=1)  # totals' emits become rows
