"""Turning emits into deliveries: tuple ids, tree edges, receive queues, leaf outputs.

Storm gives every delivery of a tuple to a task a fresh tuple id and, when
the tuple belongs to spout trees, a fresh edge id per tree (see ``acker``).
``Delivery`` does exactly that and appends the ``Tuple`` (built as pystorm
builds it) to the task's FIFO receive queue. Emits on *leaf* streams (no
subscriber) are kept in ``RunSummary.outputs`` and/or handed to a sink.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from typing import Any

from stormshift.adapters.tuples import TupleFactory
from stormshift.engines.local.tracker import TupleTracker, child_lineage
from stormshift.engines.summary import RunSummary
from stormshift.errors import TupleError
from stormshift.topology.graph import TopologyGraph

__all__ = ["Delivery", "TaskKey"]

TaskKey = tuple[str, int]
Sink = Callable[[str, str, list[Any]], None]
_MAX_ERROR_MESSAGES = 50


class Delivery:
    """Receive queues of every bolt task, and the routing of one emit into them."""

    def __init__(
        self,
        graph: TopologyGraph,
        tracker: TupleTracker,
        summary: RunSummary,
        *,
        keep_outputs: bool,
        sink: Sink | None,
        track_duplicates: bool,
    ) -> None:
        self.graph = graph
        self.tracker = tracker
        self.summary = summary
        self.keep_outputs = keep_outputs
        self.sink = sink
        self.track_duplicates = track_duplicates
        self.queues: dict[TaskKey, deque[Any]] = {
            (c.name, i): deque() for c in graph.bolts for i in range(c.par)
        }
        self._factories = {c.name: TupleFactory(graph, c.name) for c in graph.bolts}
        self._makers: dict[tuple[str, str, str], Callable[..., Any]] = {}
        self._leaf: dict[tuple[str, str], bool] = {}

    def pending(self) -> bool:
        return any(self.queues.values())

    def spout_emit(
        self, source: str, source_task_id: int, emit: Any, root: int | None, lineage: int | None
    ) -> int:
        """Deliver a spout emit; returns the XOR of the edges created under ``root``."""
        if not emit.targets:
            self._record_output(source, emit)
            return 0
        tracker, xor = self.tracker, 0
        fanout: dict[str, int] = {}
        for key in emit.targets:
            if root is None:
                self._push(key, source, emit, source_task_id, {}, None)
                continue
            edge = tracker.new_id()
            child = None
            if lineage is not None and self.track_duplicates:
                nth = fanout[key[0]] = fanout.get(key[0], -1) + 1
                child = child_lineage((lineage,), source, 0, key[0], nth)
            if self._push(key, source, emit, source_task_id, {root: edge}, child):
                xor ^= edge
        return xor

    def bolt_emit(self, source: str, source_task_id: int, emit: Any, ordinal: int) -> None:
        """Deliver a bolt emit, each delivery anchored (new edges) to ``emit.anchors``."""
        if not emit.targets:
            self._record_output(source, emit)
            return
        tracker = self.tracker
        anchor_ids = emit.anchors
        parents = tracker.lineages(anchor_ids) if anchor_ids and self.track_duplicates else None
        fanout: dict[str, int] = {}
        for key in emit.targets:
            anchors = tracker.anchor(anchor_ids) if anchor_ids else {}
            child = None
            if anchors and parents:
                nth = fanout[key[0]] = fanout.get(key[0], -1) + 1
                child = child_lineage(parents, source, ordinal, key[0], nth)
            self._push(key, source, emit, source_task_id, anchors, child)

    def _push(
        self,
        key: TaskKey,
        source: str,
        emit: Any,
        source_task_id: int,
        anchors: dict[int, int],
        lineage: int | None,
    ) -> bool:
        maker = self._makers.get((key[0], source, emit.stream))
        if maker is None:
            maker = self._makers[(key[0], source, emit.stream)] = self._factories[key[0]].maker(
                source, emit.stream
            )
        tuple_id = self.tracker.new_tuple_id()
        try:
            tup = maker(emit.values, tuple_id, source_task_id)
        except TupleError as exc:  # Storm's TupleImpl refuses it: the emitter's error
            self.record_error(source, str(exc))
            self.summary.problems.add_exception(source, exc)
            self.summary.components[key[0]].lost += 1
            return False
        if anchors:
            self.tracker.register(tuple_id, anchors, lineage, key)
        self.queues[key].append(tup)
        self.summary.components[key[0]].received += 1
        return True

    def _record_output(self, source: str, emit: Any) -> None:
        leaf_key = (source, emit.stream)
        leaf = self._leaf.get(leaf_key)
        if leaf is None:
            leaf = self._leaf[leaf_key] = not self.graph.subscriptions(source, emit.stream)
        if not leaf:
            return
        if self.keep_outputs:
            self.summary.outputs.setdefault(leaf_key, []).append(list(emit.values))
        if self.sink is not None:
            self.sink(source, emit.stream, list(emit.values))

    def record_error(self, component: str, message: str, count: bool = True) -> None:
        if count:
            self.summary.components[component].errors += 1
        if len(self.summary.error_messages) < _MAX_ERROR_MESSAGES:
            self.summary.error_messages.append(message)
