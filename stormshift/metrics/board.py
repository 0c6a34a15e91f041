"""The figures of one run, per component and task: what the endpoint and ``top`` show.

Words (as ``counts.py`` and ``engines/summary.py`` define the counters):

- per task: ``tuples_in`` / ``tuples_out`` / ``acks`` / ``fails`` /
  ``dead_lettered`` (``TupleCounts``, added up over the run), ``busy_ms`` (time the task spent
  executing), ``capacity`` (busy share of the last batch: its busy time over
  the batch's duration, Storm UI's "capacity"), ``latency`` (sampled execute
  latency, ``latency.py``), ``state_bytes`` (snapshot and keyed-map bytes written),
  ``restores`` (times its state was read back from Redis whole; a first batch with
  no stored state is not one) and ``catch_ups`` (brought up to date from deltas);
- per replayable spout task: ``source_lag``, records behind its source's head
  (Kafka: high watermark minus position; JSON lines: lines; Redis Streams:
  entries, counted up to a cap, then ``source_lag_lower_bound``), ``-1`` for
  other spouts and bolts (``spouts/lag.py``);
- per windowed bolt: its window counters and its last watermark (ms);
- per run: batches, the last batch's duration and the sum of all.

A ``Board`` is plain data: the engines feed it (``add`` per task, ``batch``
per batch), ``to_dict`` / ``from_dict`` carry it through Redis.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from stormshift.metrics.counts import COUNTERS, TupleCounts
from stormshift.metrics.latency import LatencyHistogram
from stormshift.topology.graph import TopologyGraph

__all__ = ["COUNTERS", "Board", "TaskFigures"]

@dataclass
class TaskFigures(TupleCounts):
    """One task's figures over the run: its ``TupleCounts`` and what the board adds."""

    component: str
    kind: str
    task: int
    busy_ms: float = 0.0
    capacity: float = 0.0
    state_bytes: int = 0
    restores: int = 0
    catch_ups: int = 0
    source_lag: int = -1  # records behind the source's head (-1: not a replayable spout)
    source_lag_lower_bound: bool = False  # the count stopped at a cap (Redis Streams)
    latency: LatencyHistogram = field(default_factory=LatencyHistogram)

    def to_dict(self) -> dict[str, Any]:
        out = {k: v for k, v in self.__dict__.items() if k != "latency"}
        out["busy_ms"] = round(self.busy_ms, 3)
        out["capacity"] = round(self.capacity, 4)
        out["latency"] = self.latency.to_list()
        out["latency_p50_ms"] = round(self.latency.quantile_ms(0.5), 4)
        out["latency_p99_ms"] = round(self.latency.quantile_ms(0.99), 4)
        return out

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> TaskFigures:
        names = set(cls.__dataclass_fields__) - {"latency"}
        fig = cls(**{k: v for k, v in d.items() if k in names})
        fig.latency = LatencyHistogram.from_list(d.get("latency"))
        return fig


@dataclass
class Board:
    topology: str
    engine: str
    tasks: dict[tuple[str, int], TaskFigures] = field(default_factory=dict)
    windows: dict[str, dict[str, int]] = field(default_factory=dict)  # bolt -> counters
    watermarks_ms: dict[str, int] = field(default_factory=dict)  # bolt -> last watermark
    batches: int = 0
    txid: int = -1
    batch_ms_last: float = 0.0
    batch_ms_total: float = 0.0
    stop_reason: str = "running"
    updated_ms: int = 0  # wall clock of the last update (``top`` shows its age)

    @classmethod
    def for_graph(cls, graph: TopologyGraph, engine: str) -> Board:
        """Zero figures for every task of every component (the endpoint shows them all)."""
        board = cls(graph.name, engine)
        for comp in graph:
            for task in range(comp.par):
                board.tasks[(comp.name, task)] = TaskFigures(comp.name, comp.kind.value, task)
        return board

    def task(self, component: str, task: int) -> TaskFigures:
        fig = self.tasks.get((component, task))
        if fig is None:
            kind = next((f.kind for f in self.tasks.values() if f.component == component), "bolt")
            fig = self.tasks[(component, task)] = TaskFigures(component, kind, task)
        return fig

    def add(self, component: str, task: int, **counters: int) -> None:
        """Add counters (``COUNTERS`` names) to one task."""
        fig = self.task(component, task)
        for name, n in counters.items():
            if name not in COUNTERS:
                raise KeyError(f"Board.add: {name!r} is not one of {COUNTERS}")
            setattr(fig, name, getattr(fig, name) + n)

    def batch(self, duration_ms: float, txid: int, now_ms: int) -> None:
        """One more batch (``duration_ms`` its driver-side duration); capacities of the tasks
        are their ``busy`` in it over ``duration_ms`` (``busy`` set by ``busy_in_batch``)."""
        self.batches += 1
        self.txid = max(self.txid, txid)
        self.batch_ms_last = duration_ms
        self.batch_ms_total += duration_ms
        self.updated_ms = now_ms

    def busy_in_batch(self, component: str, task: int, busy_ms: float, duration_ms: float) -> None:
        fig = self.task(component, task)
        fig.busy_ms += busy_ms
        fig.capacity = min(busy_ms / duration_ms, 1.0) if duration_ms > 0 else 0.0

    def set_lag(self, spout: str, lag: Any) -> None:
        """A source's lag (``spouts.lag.SourceLag``) on its tasks' figures."""
        for task, n in enumerate(lag.records):
            if n is not None and (spout, task) in self.tasks:
                fig = self.tasks[(spout, task)]
                fig.source_lag, fig.source_lag_lower_bound = int(n), lag.lower_bound(task)

    def add_windows(self, bolt: str, counters: dict[str, int]) -> None:
        mine = self.windows.setdefault(bolt, {})
        for name, n in counters.items():
            mine[name] = mine.get(name, 0) + int(n)

    def component_total(self, component: str, counter: str) -> int:
        return sum(getattr(f, counter) for f in self.tasks.values() if f.component == component)

    def components(self) -> list[str]:
        """Component names in the order their tasks were added (the topology's)."""
        return list(dict.fromkeys(f.component for f in self.tasks.values()))

    def sorted_tasks(self) -> Iterable[TaskFigures]:
        order = {c: i for i, c in enumerate(self.components())}
        return sorted(self.tasks.values(), key=lambda f: (order[f.component], f.task))

    def to_dict(self) -> dict[str, Any]:
        return {"topology": self.topology, "engine": self.engine,
                "stop_reason": self.stop_reason, "updated_ms": self.updated_ms,
                "batches": self.batches, "txid": self.txid,
                "batch_ms_last": round(self.batch_ms_last, 3),
                "batch_ms_total": round(self.batch_ms_total, 3),
                "tasks": [f.to_dict() for f in self.sorted_tasks()],
                "windows": {b: dict(sorted(c.items())) for b, c in sorted(self.windows.items())},
                "watermarks_ms": dict(sorted(self.watermarks_ms.items()))}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Board:
        board = cls(d["topology"], d["engine"], stop_reason=d.get("stop_reason", "running"),
                    updated_ms=int(d.get("updated_ms", 0)), batches=int(d.get("batches", 0)),
                    txid=int(d.get("txid", -1)), batch_ms_last=float(d.get("batch_ms_last", 0)),
                    batch_ms_total=float(d.get("batch_ms_total", 0)))
        for t in d.get("tasks", []):
            fig = TaskFigures.from_dict(t)
            board.tasks[(fig.component, fig.task)] = fig
        board.windows = {b: dict(c) for b, c in d.get("windows", {}).items()}
        board.watermarks_ms = {b: int(w) for b, w in d.get("watermarks_ms", {}).items()}
        return board
