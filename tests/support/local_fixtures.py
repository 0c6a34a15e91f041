"""Small streamparse components and topologies for the local engine tests.

Components are plain streamparse classes, configured through their component
config (``fixture.*`` keys) because the engine, like Storm, builds them
itself. Graphs come from the real loader (``load_topology`` on a Topology
class), as a user's would. The projects with colliding module names (``STDNAMES``,
``PICKY``, at the end) are shared with the Spark side's ``test_spark_sources.py``.
"""

from __future__ import annotations

import sysconfig
from collections import Counter
from pathlib import Path
from typing import Any, ClassVar

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

from stormshift.topology.graph import TopologyGraph
from stormshift.topology.loader import load_topology

SENTENCES = [
    "the cow jumped over the moon",
    "an apple a day keeps the doctor away",
    "four score and seven years ago",
    "snow white and the seven dwarfs",
    "i am at two with nature",
]


def sentence_at(i: int) -> str:
    return SENTENCES[i % len(SENTENCES)]


def word_totals(n_sentences: int) -> Counter[str]:
    """What a word count over the first ``n_sentences`` must give, computed directly."""
    totals: Counter[str] = Counter()
    for i in range(n_sentences):
        totals.update(sentence_at(i).split())
    return totals


# -- spouts -----------------------------------------------------------------
class SentenceSpout(ReliableSpout):
    """Reliable: msg_id = sequence number; replays failures (pystorm ReliableSpout).

    Stops (StopIteration) after ``fixture.limit`` sentences when set; records
    what Storm told it in ``acked`` / ``failed``.
    """

    outputs: ClassVar[list[Any]] = ["sentence"]

    def initialize(self, conf: dict[str, Any], ctx: dict[str, Any]) -> None:
        self.limit = conf.get("fixture.limit")
        self.max_fails = conf.get("fixture.max_fails", 3)
        self.index = 0
        self.acked: list[Any] = []
        self.failed: list[Any] = []
        self.activations: list[str] = []
        self.most_pending = 0  # unacked tuples seen when Storm asked for the next one

    def next_tuple(self) -> None:
        if self.limit is not None and self.index >= self.limit:
            raise StopIteration
        self.most_pending = max(self.most_pending, len(self.unacked_tuples))
        self.emit([sentence_at(self.index)], tup_id=self.index)
        self.index += 1

    def ack(self, tup_id: Any) -> None:
        self.acked.append(tup_id)
        super().ack(tup_id)

    def fail(self, tup_id: Any) -> None:
        self.failed.append(tup_id)
        super().fail(tup_id)

    def activate(self) -> None:
        self.activations.append("activate")

    def deactivate(self) -> None:
        self.activations.append("deactivate")


CRASHED_ONCE: set[str] = set()  # survives the process "restart", like an external trigger


class CrashOnceSpout(SentenceSpout):
    """Raises in ``next_tuple`` at ``fixture.crash_at`` the first time only."""

    def next_tuple(self) -> None:
        crash_at = self.storm_conf.get("fixture.crash_at")
        if self.index == crash_at and "spout" not in CRASHED_ONCE:
            CRASHED_ONCE.add("spout")
            raise RuntimeError(f"spout lost its connection at sentence {self.index}")
        super().next_tuple()


class UnreliableSpout(Spout):
    """Emits without msg_id: Storm never acks or fails these."""

    outputs: ClassVar[list[Any]] = ["sentence"]

    def initialize(self, conf: dict[str, Any], ctx: dict[str, Any]) -> None:
        self.limit = conf.get("fixture.limit")
        self.index = 0
        self.acked: list[Any] = []

    def next_tuple(self) -> None:
        if self.limit is not None and self.index >= self.limit:
            raise StopIteration
        self.emit([sentence_at(self.index)])
        self.index += 1

    def ack(self, tup_id: Any) -> None:
        self.acked.append(tup_id)


# -- bolts ------------------------------------------------------------------
class SplitBolt(Bolt):
    outputs: ClassVar[list[Any]] = ["word"]

    def process(self, tup: Any) -> None:
        for word in tup.values.sentence.split():
            self.emit([word])


class CountBolt(Bolt):
    """In-memory word count, the state Storm loses when the worker dies."""

    outputs: ClassVar[list[Any]] = ["word", "count"]

    def initialize(self, conf: dict[str, Any], ctx: dict[str, Any]) -> None:
        self.counts: Counter[str] = Counter()
        self.explode_on = conf.get("fixture.explode_on")

    def process(self, tup: Any) -> None:
        word = tup.values.word
        if word == self.explode_on:
            raise RuntimeError(f"cannot count {word!r}")
        self.counts[word] += 1
        self.emit([word, self.counts[word]])


class LengthRouterBolt(Bolt):
    """Two named streams: short words and long words."""

    outputs: ClassVar[list[Any]] = [Stream(["word"], "short"), Stream(["word", "length"], "long")]

    def process(self, tup: Any) -> None:
        word = tup.values.word
        if len(word) <= 3:
            self.emit([word], stream="short")
        else:
            self.emit([word, len(word)], stream="long")


class TotalBolt(Bolt):
    """Counts every tuple it gets (any stream) and emits the running total."""

    outputs: ClassVar[list[Any]] = ["stream", "total"]

    def initialize(self, conf: dict[str, Any], ctx: dict[str, Any]) -> None:
        self.totals: Counter[str] = Counter()

    def process(self, tup: Any) -> None:
        self.totals[tup.stream] += 1
        self.emit([tup.stream, self.totals[tup.stream]])


class HoldingBolt(Bolt):
    """Never acks: every tree through it times out."""

    outputs: ClassVar[list[Any]] = ["word"]
    auto_ack = False

    def initialize(self, conf: dict[str, Any], ctx: dict[str, Any]) -> None:
        self.held = 0

    def process(self, tup: Any) -> None:
        self.held += 1


class TickCounterBolt(Bolt):
    outputs: ClassVar[list[Any]] = ["word"]

    def initialize(self, conf: dict[str, Any], ctx: dict[str, Any]) -> None:
        self.ticks = 0
        self.seen = 0

    def process(self, tup: Any) -> None:
        self.seen += 1

    def process_tick(self, tup: Any) -> None:
        self.ticks += 1


class WordBatchBolt(BatchingBolt):
    """Per-batch word counts, flushed on ticks (pystorm BatchingBolt)."""

    outputs: ClassVar[list[Any]] = ["word", "count"]
    ticks_between_batches = 1

    def group_key(self, tup: Any) -> Any:
        return tup.values.word

    def process_batch(self, key: Any, tups: list[Any]) -> None:
        self.emit([key, len(tups)])


class WordTicklessBolt(TicklessBatchingBolt):
    outputs: ClassVar[list[Any]] = ["word", "count"]
    secs_between_batches = 2

    def group_key(self, tup: Any) -> Any:
        return tup.values.word

    def process_batch(self, key: Any, tups: list[Any]) -> None:
        self.emit([key, len(tups)])


# -- topologies -------------------------------------------------------------
def wordcount(
    *,
    limit: int | None = None,
    par: int = 2,
    spout: type = SentenceSpout,
    count_conf: dict[str, Any] | None = None,
    spout_conf: dict[str, Any] | None = None,
    config: dict[str, Any] | None = None,
) -> TopologyGraph:
    class WordCount(Topology):
        sentences = spout.spec(config={"fixture.limit": limit, **(spout_conf or {})})
        split = SplitBolt.spec(inputs=[sentences], par=par)
        count = CountBolt.spec(
            inputs={split: Grouping.fields("word")}, par=par, config=count_conf or {}
        )

    return load_topology(WordCount, overrides=config or {})


# Projects whose module names collide: stdnames' ``src/queue.py`` and ``src/json.py``
# with the standard library, picky's and stdnames' ``spouts.numbers.NumberSpout`` and
# ``bolts`` with each other (test_topology_sources.py, test_spark_sources.py).
TOPOLOGIES = Path(__file__).parents[1] / "fixtures" / "topologies"
STDNAMES = TOPOLOGIES / "stdnames"
PICKY = TOPOLOGIES / "picky"
STDLIB = Path(sysconfig.get_paths()["stdlib"]).resolve()


def from_stdlib(files: list[str]) -> bool:
    """Whether every one of these module files is the standard library's."""
    return all(Path(f).resolve().is_relative_to(STDLIB) for f in files)
