"""Real streamparse components and topologies for the adapters tests.

Everything here is ordinary user code, as a streamparse project would have
it; tests load the topologies with ``stormshift.topology.loader.load_topology``.
"""


from __future__ import annotations

import logging
from collections import Counter
from typing import Any

from streamparse import (
    BatchingBolt,
    Bolt,
    Grouping,
    ReliableSpout,
    Spout,
    Stream,
    TicklessBatchingBolt,
    Topology,
)

SENTENCES = ["the cow jumped over the moon", "an apple a day", "the quick brown fox"]


class SentenceSpout(Spout):
    outputs = ["sentence"]

    def initialize(self, conf: dict[str, Any], ctx: dict[str, Any]) -> None:
        self.i = 0

    def next_tuple(self) -> None:
        if self.i >= len(SENTENCES):
            raise StopIteration
        self.emit([SENTENCES[self.i]], tup_id=f"s{self.i}")
        self.i += 1


class ReliableSentenceSpout(ReliableSpout):
    outputs = ["sentence"]

    def initialize(self, conf: dict[str, Any], ctx: dict[str, Any]) -> None:
        self.i = 0

    def next_tuple(self) -> None:
        self.emit([SENTENCES[self.i % len(SENTENCES)]], tup_id=self.i)
        self.i += 1


class SplitBolt(Bolt):
    outputs = [Stream(fields=["word"]), Stream(fields=["length", "sentence"], name="stats")]

    def initialize(self, conf: dict[str, Any], ctx: dict[str, Any]) -> None:
        self.seen_context = ctx
        self.task_ids_seen: list[Any] = []

    def process(self, tup: Any) -> None:
        sentence = tup.values.sentence  # namedtuple access, as under Storm 0.10+
        for word in sentence.split():
            self.task_ids_seen.append(self.emit([word], need_task_ids=True))
        self.emit([len(sentence), sentence], stream="stats")
        self.logger.info("split %d chars", len(sentence))


class CountBolt(Bolt):
    outputs = ["word", "count"]

    def initialize(self, conf: dict[str, Any], ctx: dict[str, Any]) -> None:
        self.counts: Counter[str] = Counter()

    def process(self, tup: Any) -> None:
        word = tup.values.word
        self.counts[word] += 1
        self.emit([word, self.counts[word]])


class StatsSink(Bolt):
    outputs: list[Any] = []

    def process(self, tup: Any) -> None:
        pass


class WordSpout(Spout):
    outputs = ["word"]

    def next_tuple(self) -> None:
        self.emit(["x"])


class WordCountTopology(Topology):
    sentence_spout = SentenceSpout.spec(par=1)
    split_bolt = SplitBolt.spec(inputs=[sentence_spout], par=2)
    count_bolt = CountBolt.spec(inputs={split_bolt: Grouping.fields("word")}, par=3)
    stats_sink = StatsSink.spec(inputs=[split_bolt["stats"]], par=1)


# -- groupings: one emitter, one consumer per grouping --------------------
class PairSpout(Spout):
    outputs = [Stream(fields=["key", "n"]), Stream(fields=["key", "n"], name="direct", direct=True)]

    def next_tuple(self) -> None:
        pass


class Sink(Bolt):
    outputs: list[Any] = []

    def process(self, tup: Any) -> None:
        pass


class GroupingsTopology(Topology):
    pairs = PairSpout.spec(par=2)
    by_field = Sink.spec(inputs={pairs: Grouping.fields("key")}, par=4)
    by_two = Sink.spec(inputs={pairs: Grouping.fields("n", "key")}, par=3)
    shuffled = Sink.spec(inputs={pairs: Grouping.SHUFFLE}, par=3)
    to_none = Sink.spec(inputs={pairs: Grouping.NONE}, par=2)
    local = Sink.spec(inputs={pairs: Grouping.LOCAL_OR_SHUFFLE}, par=2)
    to_all = Sink.spec(inputs={pairs: Grouping.ALL}, par=3)
    to_global = Sink.spec(inputs={pairs: Grouping.GLOBAL}, par=3)
    directed = Sink.spec(inputs={pairs["direct"]: Grouping.DIRECT}, par=2)


# -- bolts exercising pystorm semantics -----------------------------------
class EchoBolt(Bolt):
    """Emits its input; fails words starting with 'f', acks 'a...' explicitly, raises on 'boom'."""

    outputs = ["word"]

    def process(self, tup: Any) -> None:
        word = tup.values[0]
        if word == "boom":
            raise ValueError("boom is not a word")
        if word.startswith("f"):
            self.fail(tup)
        if word.startswith("a"):
            self.ack(tup)
        self.emit([word])


class OverridingEchoBolt(EchoBolt):
    """Same logic, but overrides emit/ack/fail (calling super): forces the slow path."""

    def emit(self, tup: Any, **kwargs: Any) -> Any:  # type: ignore[override]
        return super().emit(tup, **kwargs)

    def ack(self, tup: Any) -> None:
        super().ack(tup)

    def fail(self, tup: Any) -> None:
        super().fail(tup)


class ManualBolt(Bolt):
    """auto_ack/auto_anchor off: anchors explicitly, acks the previous tuple later."""

    outputs = ["word"]
    auto_ack = False
    auto_anchor = False

    def initialize(self, conf: dict[str, Any], ctx: dict[str, Any]) -> None:
        self.held: list[Any] = []

    def process(self, tup: Any) -> None:
        self.emit([tup.values[0]])
        self.emit([tup.values[0].upper()], anchors=[tup])
        self.held.append(tup)
        if len(self.held) == 2:
            for held in self.held:
                self.ack(held)
            self.held = []


class TickBolt(Bolt):
    outputs = ["n"]

    def initialize(self, conf: dict[str, Any], ctx: dict[str, Any]) -> None:
        self.n = 0

    def process(self, tup: Any) -> None:
        self.n += 1

    def process_tick(self, tup: Any) -> None:
        self.emit([self.n])


class WordBatcher(BatchingBolt):
    outputs = ["word", "count"]
    ticks_between_batches = 2

    def group_key(self, tup: Any) -> Any:
        return tup.values[0]

    def process_batch(self, key: Any, tups: list[Any]) -> None:
        if key == "poison":
            raise RuntimeError("poisoned batch")
        self.emit([key, len(tups)])


class TicklessBatcher(TicklessBatchingBolt):
    outputs = ["word", "count"]
    secs_between_batches = 0.5

    def group_key(self, tup: Any) -> Any:
        return tup.values[0]

    def process_batch(self, key: Any, tups: list[Any]) -> None:
        self.emit([key, len(tups)])


class TicklessWithInit(TicklessBatcher):
    """A user __init__ chaining to pystorm's (which would start a thread)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.made_in_init = True


class LoggingBolt(Bolt):
    outputs = ["word"]

    def process(self, tup: Any) -> None:
        self.logger.info("got %s", tup.values[0])
        self.logger.debug("debug detail")
        self.log("via storm log", level="warning")
        logging.getLogger().warning("root logger message")
        self.report_metric("words", 1)
        self.emit([tup.values[0]])


def _nested(depth: int) -> list[Any]:
    value: list[Any] = []
    for _ in range(depth):
        value = [value]
    return value


def _cycle() -> list[Any]:
    value: list[Any] = []
    value.append(value)
    return value


class BadValueBolt(Bolt):
    outputs = ["word", "extra"]

    def process(self, tup: Any) -> None:
        kind = tup.values[0]
        bad: dict[str, Any] = {
            "set": {1, 2},
            "bytes": b"raw",
            "nan": float("nan"),
            "object": object(),
            "nested": {"ok": [1, {2, 3}]},
            "bigint": 2**70,
            "deep": _nested(500),
            "cycle": _cycle(),
        }
        if kind == "arity":
            self.emit([1, 2, 3])
        elif kind == "stream":
            self.emit(["a", "b"], stream="nope")
        elif kind == "tuple":
            self.emit(("a", (1, 2)))
        else:
            self.emit(["x", bad[kind]])


class DirectSpout(Spout):
    outputs = [Stream(fields=["n"], name="default", direct=True)]

    def next_tuple(self) -> None:
        pass


class EchoTopology(Topology):
    words = WordSpout.spec(par=1)
    echo = EchoBolt.spec(inputs=[words], par=1)
    echo_slow = OverridingEchoBolt.spec(inputs=[words], par=1)
    manual = ManualBolt.spec(inputs=[words], par=1)
    ticker = TickBolt.spec(inputs=[words], par=1, config={"topology.tick.tuple.freq.secs": 2})
    batcher = WordBatcher.spec(inputs=[words], par=1)
    tickless = TicklessBatcher.spec(inputs=[words], par=1)
    tickless_init = TicklessWithInit.spec(inputs=[words], par=1)
    logging_bolt = LoggingBolt.spec(inputs=[words], par=1)
    bad = BadValueBolt.spec(inputs=[words], par=1)
    downstream = Sink.spec(
        inputs=[
            echo,
            echo_slow,
            manual,
            ticker,
            batcher,
            tickless,
            tickless_init,
            logging_bolt,
            bad,
        ],
        par=2,
    )
    config = {"topology.tick.tuple.freq.secs": 5}


class KeyedTopology(Topology):
    """Consumers whose choice depends only on key fields (routing memoized per key)."""

    pairs = PairSpout.spec(par=2)
    by_key = Sink.spec(inputs={pairs: Grouping.fields("key")}, par=4)
    by_n = Sink.spec(inputs={pairs: Grouping.fields("n")}, par=3)
    by_both = Sink.spec(inputs={pairs: Grouping.fields("n", "key")}, par=5)
    to_global = Sink.spec(inputs={pairs: Grouping.GLOBAL}, par=3)
    to_all = Sink.spec(inputs={pairs: Grouping.ALL}, par=2)
    just_one = Sink.spec(inputs={pairs: Grouping.fields("key")}, par=1)


class ColocatedTopology(Topology):
    """A head an engine runs beside its spout's task (shuffle, same par) and another consumer."""

    pairs = PairSpout.spec(name="spout", par=2)
    head = Sink.spec(name="head", inputs={pairs: Grouping.SHUFFLE}, par=2)
    other = Sink.spec(name="other", inputs={pairs: Grouping.fields("key")}, par=2)


class LoneColocatedTopology(Topology):
    """The spout's only consumer runs beside it."""

    pairs = PairSpout.spec(name="spout", par=2)
    head = Sink.spec(name="head", inputs={pairs: Grouping.SHUFFLE}, par=2)
# -- the per-tuple kernel (tests/test_kernel.py) --------------------------------
class FlakyBolt(Bolt):
    """Echoes its word. "flakyN" raises on its first N attempts, after emitting; "typo" emits
    to an undeclared stream; "f..." is failed by the bolt; "enc..." is echoed (an engine
    may refuse to encode it)."""

    outputs = ["word"]

    def initialize(self, conf: dict[str, Any], ctx: dict[str, Any]) -> None:
        self.attempts: Counter[str] = Counter()

    def process(self, tup: Any) -> None:
        word = tup.values.word
        self.attempts[word] += 1
        if word == "typo":
            self.emit([word], stream="nope")
        self.emit([word])
        if word.startswith("flaky") and self.attempts[word] <= int(word[5:]):
            raise RuntimeError(f"{word} attempt {self.attempts[word]}")
        if word.startswith("f") and not word.startswith("flaky"):
            self.fail(tup)


class KernelTopology(Topology):
    words = WordSpout.spec(par=1)
    flaky = FlakyBolt.spec(inputs=[words], par=1)
    batcher = WordBatcher.spec(inputs=[words], par=1)
    sink = Sink.spec(inputs=[flaky, batcher], par=1)
