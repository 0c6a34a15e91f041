"""What a component can do is read once at load and kept on the frozen graph.

Real shapes are loaded as a user's topology would be (plain bolt, BatchingBolt
with ticks, TicklessBatchingBolt, a windowed bolt, stormshift's replayable
spouts, spouts that can and cannot end, a subclass of a user bolt), and the
engines' decisions (ticks, drain ticks, windowed bolts, the source planner) are
shown to come from the graph alone: they still hold once the class cannot be
imported any more.
"""

from __future__ import annotations

import dataclasses
import pickle
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import pytest
from streamparse import (
    BatchingBolt,
    Bolt,
    Grouping,
    ReliableSpout,
    Spout,
    TicklessBatchingBolt,
    Topology,
)
from support.windows_fixtures import ClickSpout, ProbeBolt

from stormshift.engines.spark.driver.ticks import drain_ticks, tick_intervals_ms
from stormshift.engines.spark.driver.windows import time_bolts
from stormshift.errors import TopologyError
from stormshift.shadow.inputs import InputSpec, apply_input
from stormshift.spouts.jsonlines import JsonLinesSpout
from stormshift.spouts.kafka import KafkaSpout
from stormshift.spouts.redis_streams import RedisStreamSpout
from stormshift.topology.capabilities import Batching, Capabilities, EmitPath, SourceKind
from stormshift.topology.graph import TopologyGraph, freeze
from stormshift.topology.loader import load_topology, with_class

TICKS = "topology.tick.tuple.freq.secs"


class Words(Spout):
    outputs: ClassVar[list[str]] = ["word"]

    def initialize(self, conf: Any, ctx: Any) -> None:
        self.words = iter(["a", "b"])

    def next_tuple(self) -> None:
        word = next(self.words, None)
        if word is None:
            raise StopIteration
        self.emit([word])


class Forever(Spout):
    outputs: ClassVar[list[str]] = ["word"]

    def next_tuple(self) -> None:
        self.emit(["again"])


class Iterating(Spout):
    """Ends because ``next(it)`` raises StopIteration out of next_tuple."""

    outputs: ClassVar[list[str]] = ["word"]

    def initialize(self, conf: Any, ctx: Any) -> None:
        self.it: Iterator[str] = iter(["a"])

    def next_tuple(self) -> None:
        self.emit([next(self.it)])


class Replaying(ReliableSpout):
    outputs: ClassVar[list[str]] = ["word"]

    def next_tuple(self) -> None:
        raise StopIteration


class Plain(Bolt):
    outputs: ClassVar[list[str]] = ["word"]

    def process(self, tup: Any) -> None:
        self.emit(tup.values)


class Batches(BatchingBolt):
    outputs: ClassVar[list[str]] = ["word"]
    ticks_between_batches = 3

    def process_batch(self, key: Any, tups: Any) -> None:
        self.emit([key])

    def end_of_input(self) -> None:
        self.emit(["end"])


class Timed(TicklessBatchingBolt):
    outputs: ClassVar[list[str]] = ["word"]
    secs_between_batches = 0.5

    def process_batch(self, key: Any, tups: Any) -> None:
        self.emit([key])


class MoreBatches(Batches):
    """A user bolt over another user bolt: batching, its ticks and end_of_input inherited."""

    def emit(self, *args: Any, **kwargs: Any) -> Any:  # its own emit: the slow path
        return super().emit(*args, **kwargs)


class Lines(JsonLinesSpout):
    outputs: ClassVar[list[str]] = ["value"]


class Entries(RedisStreamSpout):
    outputs: ClassVar[list[str]] = ["value"]


class Records(KafkaSpout):
    outputs: ClassVar[list[str]] = ["value"]


def _graph(extra: dict[str, Any] | None = None) -> TopologyGraph:
    words = Words.spec(name="words")
    parts: dict[str, Any] = {
        "words": words,
        "plain": Plain.spec(name="plain", inputs=[words]),
        "batches": Batches.spec(name="batches", inputs=[words], config={TICKS: 2}),
        "timed": Timed.spec(name="timed", inputs=[words]),
        "more": MoreBatches.spec(name="more", inputs=[words], config={TICKS: 1}),
        "forever": Forever.spec(name="forever"),
        "iterating": Iterating.spec(name="iterating"),
        "replaying": Replaying.spec(name="replaying"),
        **(extra or {}),
    }
    return load_topology(type("Shapes", (Topology,), parts))


def _caps(graph: TopologyGraph, name: str) -> Capabilities:
    return graph.component(name).capabilities


def test_a_plain_bolt_has_no_ticks_batching_or_hooks() -> None:
    caps = _caps(_graph(), "plain")
    assert (caps.batching, caps.tick_interval_ms, caps.hooks) == (Batching.NONE, None, frozenset())
    assert not caps.spout and caps.source is None and not caps.windowed
    assert (caps.emit_path, caps.fast_ack, caps.fast_fail) == (EmitPath.BOLT, True, True)


def test_batching_bolts_carry_their_ticks_and_flush_needs() -> None:
    graph = _graph()
    batches, timed = _caps(graph, "batches"), _caps(graph, "timed")
    assert (batches.batching, batches.ticks_between_batches, batches.tick_interval_ms) == \
        (Batching.TICKS, 3, 2000)
    assert batches.ticks_to_flush == 4 and batches.end_of_input
    assert batches.emit_path is EmitPath.BATCHING
    assert (timed.batching, timed.secs_between_batches, timed.tick_interval_ms) == \
        (Batching.TICKLESS, 0.5, 500)
    assert timed.ticks_to_flush == 1
    intervals = tick_intervals_ms(graph)
    assert intervals == {"batches": 2000, "timed": 500, "more": 1000}
    # the shortest tick is 500 ms: batches needs 4 ticks of 4 steps, more 4 of 2
    assert drain_ticks(graph, intervals) == 16


def test_a_subclass_of_a_user_bolt_inherits_its_capabilities() -> None:
    more = _caps(_graph(), "more")
    assert (more.batching, more.ticks_between_batches, more.end_of_input) == \
        (Batching.TICKS, 3, True)
    assert more.emit_path is None  # it defines emit itself


def test_a_windowed_bolt_is_found_by_its_hooks() -> None:
    spout = ClickSpout.spec(name="clicks")
    probe = ProbeBolt.spec(name="probe", inputs={spout: Grouping.fields("advertiser")})
    graph = load_topology(type("Windowed", (Topology,), {"clicks": spout, "probe": probe}),
                          overrides={"fixture.windowing": "sliding_expired", "fixture.clicks": []})
    caps = _caps(graph, "probe")
    assert caps.windowed and caps.end_of_input and caps.has("window_counters")
    assert time_bolts(graph) == (["probe"], True)


@pytest.mark.parametrize("cls", [Lines, Entries, Records])
def test_stormshift_spouts_are_replayable_and_can_end(cls: Any) -> None:
    spout = cls.spec(name="src")
    sink = Plain.spec(name="sink", inputs=[spout])
    caps = _caps(load_topology(type("Replay", (Topology,), {"src": spout, "sink": sink})), "src")
    assert caps.spout and caps.replayable and caps.source is SourceKind.REPLAY
    assert caps.has("local_lag") and caps.signals_end
    assert caps.has("replay_commit") == (cls is Records)


def test_generic_spouts_say_whether_they_can_end() -> None:
    graph = _graph()
    assert [_caps(graph, n).signals_end for n in ("words", "iterating", "forever")] == \
        [True, True, False]
    assert all(_caps(graph, n).source is SourceKind.GENERIC for n in ("words", "forever"))
    replaying = _caps(graph, "replaying")
    assert replaying.reliable and replaying.emit_path is EmitPath.RELIABLE
    assert not _caps(graph, "words").reliable


def test_engines_decide_from_the_graph_without_the_class() -> None:
    """Capabilities pickle with the graph, and the engines' decisions hold on a graph
    whose classes cannot be imported (an executor never needs the class to decide)."""
    graph = pickle.loads(pickle.dumps(_graph()))
    assert graph == _graph()
    # the same capabilities under class paths no process can import (said to be read for
    # them: a class path changed alone is refused, test_a_class_swapped_alone_is_refused)
    gone = {n: dataclasses.replace(c, class_path=f"nowhere.{n}", capabilities=dataclasses.replace(
                c.capabilities, read_for=f"nowhere.{n}"))
            for n, c in graph.components.items()}
    blind = dataclasses.replace(graph, components=freeze(gone), source_dirs=())
    assert tick_intervals_ms(blind) == tick_intervals_ms(graph)
    assert drain_ticks(blind, tick_intervals_ms(blind)) == 16
    assert time_bolts(blind) == ([], True)


def test_a_class_swapped_alone_is_refused() -> None:
    """Capabilities left from the class a component had: the engines would decide from them
    (a replayable spout put in a generic one's place was hosted and logged on the driver);
    ``with_class`` reads the new class's."""
    graph = _graph()
    words = graph.component("words")
    assert words.capabilities.read_for == words.class_path
    with pytest.raises(TopologyError, match="with_class"):
        dataclasses.replace(words, class_path="stormshift.spouts.jsonlines.JsonLinesSpout")
    swapped = with_class(words, "stormshift.spouts.jsonlines.JsonLinesSpout", graph.source_dirs,
                         {**words.config, "jsonlines.path": "/nowhere"})
    assert swapped.capabilities.replayable and not words.capabilities.replayable
    assert pickle.loads(pickle.dumps(swapped)) == swapped
    assert dataclasses.replace(swapped, par=3).capabilities == swapped.capabilities


def test_a_shadow_input_reads_the_replacement_spouts_capabilities(tmp_path: Path) -> None:
    graph = _graph()
    assert not _caps(graph, "words").replayable
    for spout in graph.spouts:
        (tmp_path / spout.name).mkdir()
    shadowed = apply_input(graph, InputSpec("jsonl", str(tmp_path)))
    assert all(c.capabilities.replayable for c in shadowed.spouts)
    assert _caps(shadowed, "batches") == _caps(graph, "batches")


def test_an_unknown_hook_name_is_refused() -> None:
    with pytest.raises(ValueError, match="not an engine hook"):
        Capabilities().has("start_bacth")
