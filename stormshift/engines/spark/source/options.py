"""What the streaming source (``source.py``) and its planner (``planner.py``) share.

The string options a spout's source is created with (``source_options``, built
on the driver) and their parsed form (``Opts``, in the planner process and in
every ``read``), the input partitions the planner returns and ``read`` gets
(pickled to the executors), and the planning-time clock. Its own module so
that ``source.py`` -> ``planner.py`` is the only import between the two.
"""

from __future__ import annotations

import base64
import time
from dataclasses import dataclass, field
from typing import Any

from pyspark import cloudpickle
from pyspark.sql.datasource import InputPartition

from stormshift.topology.graph import TopologyGraph

__all__ = ["ChunkPartition", "Opts", "ReplayPartition", "WalPartition", "now_ms", "source_options"]


def source_options(graph: TopologyGraph, spout: str, *, redis_url: str, namespace: str, batch_max: int,
                   budget_ms: int, max_total: int | None, tick_ms: int,
                   drain_ticks: int = 4, idle_ms: int = 0, checkpoint_id: str = "") -> dict[str, str]:
    """The string options one spout's source is created with."""
    return {
        "graph": base64.b64encode(cloudpickle.dumps(graph)).decode("ascii"),
        "spout": spout, "redis_url": redis_url, "namespace": namespace,
        "batch_max": str(batch_max), "budget_ms": str(budget_ms),
        "max_total": str(-1 if max_total is None else max_total), "tick_ms": str(tick_ms),
        "drain_ticks": str(drain_ticks), "idle_ms": str(idle_ms), "checkpoint_id": checkpoint_id,
    }


@dataclass(frozen=True)
class Opts:
    graph: TopologyGraph
    spout: str
    redis_url: str
    namespace: str
    batch_max: int
    budget_ms: int
    max_total: int
    tick_ms: int
    drain_ticks: int = 4  # tick intervals after end of input (ticks.drain_ticks)
    idle_ms: int = 0  # --until-done: a spout task idle this long is taken as ended (0: never)
    checkpoint_id: str = ""  # the query's checkpoint: its start is kept per checkpoint
    raw: dict = field(default_factory=dict, compare=False, repr=False)  # the string options parsed

    @classmethod
    def parse(cls, o: Any) -> Opts:
        graph = cloudpickle.loads(base64.b64decode(o["graph"]))
        return cls(graph, o["spout"], o["redis_url"], o["namespace"], int(o["batch_max"]),
                   int(o["budget_ms"]), int(o["max_total"]), int(o["tick_ms"]),
                   int(o.get("drain_ticks", 4)), int(o.get("idle_ms", 0)), o.get("checkpoint_id", ""),
                   dict(o))


class WalPartition(InputPartition):
    def __init__(self, task: int, start: int, end: int):
        super().__init__((task, start, end))
        self.task, self.start, self.end = task, start, end


class ChunkPartition(InputPartition):
    """An executor-side spout task's input of one batch: chunk ``number`` (-1: none) of at
    most ``limit`` tuples (``planner/chunk_planner.py``)."""

    def __init__(self, task: int, number: int, limit: int):
        super().__init__((task, number, limit))
        self.task, self.number, self.limit = task, number, limit


class ReplayPartition(InputPartition):
    def __init__(self, task: int, ranges: list[tuple[str, Any, Any]]):
        super().__init__((task, ranges))
        self.task, self.ranges = task, ranges


def now_ms() -> int:
    """Planning-time clock (never used inside a batch's computation)."""
    return int(time.time() * 1000)
