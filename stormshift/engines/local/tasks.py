"""The tasks of a local run: hosts, receive queues, and the ack plumbing between them.

``TaskSet`` owns one host per task, one FIFO queue per bolt task, the
``TupleTracker`` (in-flight tuples) and the spout callback queue. It turns
what a host's outbox captured into Storm's effects: emits become deliveries
with fresh tuple ids and new edges of their trees; bolt acks/fails become
acker messages; finished trees become ``spout.ack``/``spout.fail`` calls,
queued and delivered in order (as Storm delivers them through the spout
executor's queue, never re-entrantly).
"""

from __future__ import annotations

import json
import logging
import time
from collections import deque
from collections.abc import Callable, Hashable
from typing import Any

from stormshift.adapters.host import host_component
from stormshift.engines.local.acker import Acker, Tree
from stormshift.engines.local.faults import Action, ActiveFaults
from stormshift.engines.local.scheduler import TICK, Clock
from stormshift.engines.local.tracker import TupleTracker, child_lineage, spout_lineage
from stormshift.engines.summary import ComponentStats, RunSummary
from stormshift.errors import ComponentFailure, TupleError
from stormshift.topology.graph import TopologyGraph

__all__ = ["TaskSet"]

log = logging.getLogger(__name__)
_MAX_ERROR_MESSAGES = 50
TaskKey = tuple[str, int]


def msg_key(msg_id: Any) -> Hashable:
    """A hashable, stable stand-in for a JSON msg_id (lists become JSON text)."""
    try:
        hash(msg_id)
        return msg_id  # type: ignore[no-any-return]
    except TypeError:
        return json.dumps(msg_id, sort_keys=True, default=repr)


class TaskSet:
    def __init__(
        self,
        graph: TopologyGraph,
        summary: RunSummary,
        acker: Acker,
        clock: Clock,
        *,
        seed: int,
        conf_overrides: dict[str, Any],
        acking: bool,
        keep_outputs: bool,
        sink: Callable[[str, str, list[Any]], None] | None,
        track_duplicates: bool,
        drop_queue_on_crash: bool,
    ) -> None:
        self.graph = graph
        self.summary = summary
        self.acker = acker
        self.clock = clock
        self.tracker = TupleTracker(seed)
        self.conf_overrides = conf_overrides
        self.acking = acking
        self.keep_outputs = keep_outputs
        self.sink = sink
        self.track_duplicates = track_duplicates
        self.drop_queue_on_crash = drop_queue_on_crash
        self.hosts: dict[TaskKey, Any] = {}
        self.queues: dict[TaskKey, deque[Any]] = {}
        self.callbacks: deque[tuple[Tree, bool]] = deque()
        self.seen_msg_ids: dict[TaskKey, set[Hashable]] = {}
        self.executed: dict[str, set[int]] = {c.name: set() for c in graph.bolts}
        self.max_pending: dict[str, int | None] = {}
        self._leaf: dict[tuple[str, str], bool] = {}
        self._spout_keys = [(c.name, i) for c in graph.spouts for i in range(c.par)]
        self._bolt_keys = [(c.name, i) for c in graph.bolts for i in range(c.par)]

    # -- lifecycle ----------------------------------------------------------
    def _new_host(self, component: str, task_index: int) -> Any:
        host = host_component(self.graph, component, task_index, conf_overrides=self.conf_overrides)
        host.open()
        return host

    def open_all(self) -> None:
        for comp in self.graph:
            value = {**comp.config, **self.conf_overrides}.get("topology.max.spout.pending")
            self.max_pending[comp.name] = int(value) if value else None
            for task_index in range(comp.par):
                key = (comp.name, task_index)
                self.hosts[key] = self._new_host(comp.name, task_index)
                if comp.is_spout:
                    self.seen_msg_ids[key] = set()
                else:
                    self.queues[key] = deque()
        for key in self._spout_keys:  # Storm activates an active topology's spouts at start
            self.hosts[key].activate()
            self._dispatch_spout(key)

    def deactivate_spouts(self) -> None:
        for key in self._spout_keys:
            self.hosts[key].deactivate()
            self._dispatch_spout(key)

    def instances(self, component: str) -> list[Any]:
        comp = self.graph.component(component)
        return [self.hosts[(component, i)].instance for i in range(comp.par)]

    def tick_intervals(self) -> dict[str, float]:
        """Bolts with tick tuples configured, and their interval in seconds."""
        found: dict[str, float] = {}
        for name, task_index in self._bolt_keys:
            secs = self.hosts[(name, task_index)].tick_interval_secs
            if secs:
                found[name] = float(secs)
        return found

    def tickless_intervals(self) -> dict[TaskKey, float]:
        """TicklessBatchingBolt tasks and their ``secs_between_batches``."""
        return {
            key: float(self.hosts[key].tickless_interval_secs)
            for key in self._bolt_keys
            if self.hosts[key].is_tickless
        }

    # -- state queries ------------------------------------------------------
    def all_spouts_exhausted(self) -> bool:
        return all(self.hosts[k].exhausted for k in self._spout_keys)

    def idle(self) -> bool:
        return not self.callbacks and not any(self.queues.values())

    # -- spouts -------------------------------------------------------------
    def pull_spouts(self, max_tuples: int | None) -> tuple[bool, bool]:
        """One ``next_tuple`` per spout task allowed to emit: (emitted?, any asked?)."""
        emitted = asked = False
        for key in self._spout_keys:
            if max_tuples is not None and self.summary.spout_tuples >= max_tuples:
                break
            host = self.hosts[key]
            limit = self.max_pending[key[0]]
            if host.exhausted or (limit is not None and self.acker.pending(*key) >= limit):
                continue
            asked = True
            started = time.perf_counter()
            try:
                host.next_tuple()
            except ComponentFailure as exc:
                self._spout_crashed(key, exc)
                continue
            finally:
                self._busy(key[0], started)
            emitted = self._dispatch_spout(key) or emitted
        return emitted, asked

    def _dispatch_spout(self, key: TaskKey) -> bool:
        name, task_index = key
        box = self.hosts[key].outbox.drain()
        stats = self.summary.components[name]
        self._note_side_effects(stats, box)
        source_task_id = self.graph.component(name).task_id(task_index)
        for emit in box.emits:
            stats.tuples_out += 1
            self._spout_emit(key, stats, emit, source_task_id)
        return bool(box.emits)

    def _spout_emit(self, key: TaskKey, stats: ComponentStats, emit: Any, source_task_id: int) -> None:
        name = key[0]
        if emit.msg_id is None:  # unreliable: no tree
            self.summary.spout_tuples += 1
            self._fan_out(name, emit, source_task_id, lambda consumer, fanout: ({}, None))
            return
        mkey = msg_key(emit.msg_id)
        seen = self.seen_msg_ids[key]
        if mkey in seen:
            stats.replays += 1
        else:
            seen.add(mkey)
            self.summary.spout_tuples += 1
        if not self.acking:  # topology.acker.executors = 0: Storm acks at once
            self._fan_out(name, emit, source_task_id, lambda consumer, fanout: ({}, None))
            self.callbacks.append((Tree(0, name, key[1], emit.msg_id, 0, 0), True))
            return
        root = self.tracker.new_id()
        base = spout_lineage(name, emit.stream, mkey)
        edges: list[int] = []

        def anchors(consumer: str, fanout: int) -> tuple[dict[int, int], int]:
            edge = self.tracker.new_id()
            edges.append(edge)
            return {root: edge}, child_lineage([base], name, 0, consumer, fanout)

        self._fan_out(name, emit, source_task_id, anchors)
        xor = 0
        for edge in edges:
            xor ^= edge
        done = self.acker.init(root, name, key[1], emit.msg_id, xor, self.clock.now_ms())
        if done is not None:
            self.callbacks.append((done, True))

    def _spout_crashed(self, key: TaskKey, exc: ComponentFailure) -> None:
        """A spout process died: its pending trees are forgotten, a fresh instance opens."""
        stats = self.summary.components[key[0]]
        if not self._note_side_effects(stats, self.hosts[key].outbox.drain()):
            self._record_error(stats, str(exc))
        stats.restarts += 1
        self.acker.forget_task(*key)
        self.hosts[key] = self._new_host(*key)
        self.hosts[key].activate()
        self._dispatch_spout(key)

    def tree_done(self, tree: Tree, ok: bool, timed_out: bool = False) -> None:
        """Queue the spout callback of a finished tree."""
        if timed_out:
            self.summary.components[tree.spout].timeouts += 1
        self.callbacks.append((tree, ok))

    def run_callbacks(self) -> bool:
        """Deliver queued ``ack``/``fail`` calls to spouts (replays emit here)."""
        did = bool(self.callbacks)
        while self.callbacks:
            tree, ok = self.callbacks.popleft()
            key = (tree.spout, tree.task_index)
            host, stats = self.hosts[key], self.summary.components[tree.spout]
            started = time.perf_counter()
            try:
                if ok:
                    stats.acks += 1
                    host.ack(tree.msg_id)
                else:
                    stats.fails += 1
                    host.fail(tree.msg_id)
            except ComponentFailure as exc:
                self._spout_crashed(key, exc)
                continue
            finally:
                self._busy(tree.spout, started)
            self._dispatch_spout(key)
        return did

    # -- bolts --------------------------------------------------------------
    def enqueue_tick(self, component: str) -> None:
        for task_index in range(self.graph.component(component).par):
            self.queues[(component, task_index)].append(TICK)

    def flush_tickless(self, component: str, task_index: int) -> None:
        key = (component, task_index)
        self._call_bolt(key, lambda host: host.flush_tickless(), None)

    def run_bolts(self, faults: ActiveFaults) -> bool:
        """Every bolt task drains its queue, upstream components first."""
        did = False
        for key in self._bolt_keys:
            queue = self.queues[key]
            while queue:
                did = True
                item = queue.popleft()
                if item is TICK:
                    self._call_bolt(key, lambda host: host.tick(), None)
                else:
                    self._execute(key, item, faults.on_deliver(key[0], key[1], item))
        return did

    def _execute(self, key: TaskKey, tup: Any, action: Action) -> None:
        stats = self.summary.components[key[0]]
        stats.tuples_in += 1
        if action is Action.CRASH:
            self._record_error(stats, f"{key[0]}[{key[1]}]: injected crash (process killed) at tuple {tup.id}")
            self._bolt_crashed(key)
            return
        if action is Action.FAIL_BEFORE:
            stats.fails += 1
            self._fail_tuple(tup.id)
            return
        if self.track_duplicates:
            entry = self.tracker.get(tup.id)
            if entry is not None and entry.lineage is not None:
                done = self.executed[key[0]]
                if entry.lineage in done:
                    stats.duplicates += 1
                else:
                    done.add(entry.lineage)
        extra_fail = tup.id if action is Action.FAIL_AFTER else None
        self._call_bolt(key, lambda host: host.execute(tup), extra_fail)

    def _call_bolt(self, key: TaskKey, call: Callable[[Any], None], extra_fail: str | None) -> None:
        host = self.hosts[key]
        started = time.perf_counter()
        try:
            call(host)
        except ComponentFailure as exc:
            self._busy(key[0], started)
            if not self._dispatch_bolt(key, None):
                self._record_error(self.summary.components[key[0]], str(exc))
            self._bolt_crashed(key)
            return
        self._busy(key[0], started)
        self._dispatch_bolt(key, extra_fail)

    def _dispatch_bolt(self, key: TaskKey, extra_fail: str | None) -> int:
        """Apply a bolt's outbox: emits first (anchoring needs the inputs), then fails, then acks.

        Returns the number of errors the bolt reported.
        """
        name = key[0]
        box = self.hosts[key].outbox.drain()
        stats = self.summary.components[name]
        errors = self._note_side_effects(stats, box)
        source_task_id = self.graph.component(name).task_id(key[1])
        for ordinal, emit in enumerate(box.emits):
            stats.tuples_out += 1
            parents = self.tracker.lineages(emit.anchors) if emit.anchors else []

            def anchors(consumer: str, fanout: int, emit: Any = emit, ordinal: int = ordinal) -> tuple[dict[int, int], int | None]:
                found = self.tracker.anchor(emit.anchors) if emit.anchors else {}
                if not found:
                    return found, None
                return found, child_lineage(parents, name, ordinal, consumer, fanout)

            self._fan_out(name, emit, source_task_id, anchors)
        if extra_fail is not None:
            stats.fails += 1
            self._fail_tuple(extra_fail)
        for tuple_id in box.fails:
            stats.fails += 1
            self._fail_tuple(tuple_id)
        for tuple_id in box.acks:
            stats.acks += 1
            for root, xor in self.tracker.ack(tuple_id):
                tree = self.acker.ack(root, xor)
                if tree is not None:
                    self.callbacks.append((tree, True))
        return errors

    def _fail_tuple(self, tuple_id: str) -> None:
        for root in self.tracker.fail(tuple_id):
            tree = self.acker.fail(root)
            if tree is not None:
                self.callbacks.append((tree, False))

    def _bolt_crashed(self, key: TaskKey) -> None:
        """The task's process died: queue and held tuples lost, fresh instance."""
        stats = self.summary.components[key[0]]
        stats.restarts += 1
        if self.drop_queue_on_crash:
            self.queues[key].clear()
        self.tracker.drop_task(*key)
        self.hosts[key] = self._new_host(*key)

    # -- delivery -----------------------------------------------------------
    def _fan_out(
        self,
        source: str,
        emit: Any,
        source_task_id: int,
        anchors: Callable[[str, int], tuple[dict[int, int], int | None]],
    ) -> None:
        """Deliver one emit to its target tasks (or record it if the stream is a leaf)."""
        if not emit.targets:
            self._record_output(source, emit)
            return
        fanout: dict[str, int] = {}
        for consumer, task_index in emit.targets:
            key = (consumer, task_index)
            nth = fanout[consumer] = fanout.get(consumer, -1) + 1
            tuple_id = self.tracker.new_tuple_id()
            try:
                tup = self.hosts[key].tuple_factory.make(source, emit.stream, source_task_id, emit.values, tuple_id)
            except TupleError as exc:
                self._record_error(self.summary.components[source], str(exc))
                continue
            found, lineage = anchors(consumer, nth)
            self.tracker.register(tuple_id, found, lineage, key)
            self.queues[key].append(tup)

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

    # -- bookkeeping --------------------------------------------------------
    def _note_side_effects(self, stats: ComponentStats, box: Any) -> int:
        """Count reported errors and forward logs; returns the number of errors."""
        for message in box.errors:
            self._record_error(stats, f"{stats.name}: {message}")
        for level, message in box.logs:
            logging.getLogger(f"stormshift.component.{stats.name}").log(_level(level), "%s", message)
        return len(box.errors)

    def _record_error(self, stats: ComponentStats, message: str, count: bool = True) -> None:
        if count:
            stats.errors += 1
        if len(self.summary.error_messages) < _MAX_ERROR_MESSAGES:
            self.summary.error_messages.append(message)

    def _busy(self, component: str, started: float) -> None:
        self.summary.components[component].busy_ms += (time.perf_counter() - started) * 1000


_LEVELS = {"TRACE": 5, "DEBUG": logging.DEBUG, "INFO": logging.INFO, "WARN": logging.WARNING, "ERROR": logging.ERROR}


def _level(level: Any) -> int:
    """Storm's multilang log level (TRACE..ERROR or a number) as a logging level."""
    if isinstance(level, int):
        return level
    return _LEVELS.get(str(level).upper(), logging.INFO)
