"""A window scenario (``tests/windows_scenarios``) as a Spark topology, batches cut by the spout.

``StepSpout`` is a replayable spout over a scenario's steps (config
``steps.steps``, a JSON list) with one partition per scenario partition; its
offsets are step positions and each batch ends at the next of ``steps.cuts``
(every batch boundary is in the offsets, so Spark's offset log replays it).
The windowed bolt and the collecting bolt are the local engine's
(``support/windows_fixtures.py``). ``Scenario`` has one partition; ``topology(n)`` n.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # support.windows_fixtures (tests/)

from streamparse import Grouping, Topology
from support.windows_fixtures import CollectBolt, ScenarioBolt

from stormshift.spouts.base import ReplayableSpout, msg_id_for
from stormshift.windows import Windowing


class StepSpout(ReplayableSpout):
    outputs: ClassVar[list[Any]] = ["key", "t", "v"]
    config_prefix = "steps"

    def replay_configure(self, conf: Mapping[str, Any]) -> None:
        self.steps = json.loads(conf["steps.steps"])
        self.cuts = [int(c) for c in json.loads(conf["steps.cuts"])]
        self.n_partitions = int(conf.get("steps.partitions", 1))
        self._bounded = True

    def replay_partitions(self) -> list[str]:
        return [f"p{i}" for i in range(self.n_partitions)]

    def replay_initial_offsets(self) -> dict[str, Any]:
        return dict.fromkeys(self.replay_partitions(), 0)

    def replay_initial_offset(self, partition: str) -> Any:
        return 0

    def replay_partition_done(self, partition: str, offset: Any) -> bool:
        return int(offset) >= len(self.steps)

    def replay_plan(self, start: dict[str, Any], budgets: Sequence[int]
                    ) -> tuple[dict[str, Any], list[int]]:
        """The next batch: every partition up to the next cut (budgets do not apply)."""
        parts = self.replay_partitions()
        at = min(int(start.get(p, 0)) for p in parts)
        end = next((c for c in self.cuts if c > at), len(self.steps))
        counts = [0] * self._par
        for step in self.steps[at:end]:
            if "element" in step:
                counts[step["element"].get("p", 0) % self._par] += 1
        return dict.fromkeys(parts, end), counts

    def replay_read(self, partition: str, start: Any, end: Any) -> Iterator[tuple[list[Any], str]]:
        index = int(partition[1:])
        for i in range(int(start), int(end)):
            e = self.steps[i].get("element")
            if e is not None and e.get("p", 0) == index:
                yield [e["key"], e["t"], e["v"]], msg_id_for(partition, i + 1)


class SparkScenarioBolt(ScenarioBolt):
    """The scenario's windowed bolt (its windowing from ``fixture.scenario``). The class's
    placeholder is event time, so ``spec()`` asks for no ticks: on Spark, processing time
    comes with each batch, and ticks would only add batches after end of input."""

    windowing = Windowing.tumbling(duration_ms=1000).with_timestamp_field("t")


class SparkCollectBolt(CollectBolt):
    """Panes, retractions and late tuples as ``(kind, payload)`` leaf emits."""


def topology(partitions: int) -> Any:
    spout = StepSpout.spec(name="events", par=partitions)
    windows = SparkScenarioBolt.spec(name="windows", inputs={spout: Grouping.fields("key")})
    collect = SparkCollectBolt.spec(name="collect", inputs=[
        windows["default"], windows["default_retract"], windows["late"]])
    return type(f"Scenario{partitions}", (Topology,), {
        "events": spout, "windows": windows, "collect": collect, "__module__": __name__})


class Scenario(Topology):
    events = StepSpout.spec(name="events")
    windows = SparkScenarioBolt.spec(name="windows", inputs={events: Grouping.fields("key")})
    collect = SparkCollectBolt.spec(name="collect", inputs=[
        windows["default"], windows["default_retract"], windows["late"]])
