"""The tasks of a local run: hosts, and Storm's effects of what they did.

``TaskSet`` owns one host per task and applies each host's outbox after each
call: emits go to ``Delivery`` (new tuples, new tree edges); bolt acks/fails
become acker messages; finished trees become ``spout.ack``/``spout.fail``
calls, queued and delivered in order -- as Storm delivers them through the
spout executor's queue, never re-entrantly. It also restarts crashed tasks.
A bolt executes each tuple through the per-tuple kernel (``adapters/kernel.py``),
one at a time with Storm's semantics: a raise crashes the task.

Nothing disappears uncounted: a crashed bolt task's queued tuples count as
``lost``; every error goes to the run's ``ErrorDigest`` with its type,
message and the user's file:line; a spout tuple that failed more than
``max_replays`` times is no longer handed back to its spout (``gave_up``),
so a bolt that fails every tuple cannot keep a bounded run going forever.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable, Hashable
from typing import Any

from stormshift.adapters.host import host_component
from stormshift.engines.local.acker import Acker, Tree
from stormshift.engines.local.delivery import Delivery, Sink, TaskKey
from stormshift.engines.local.faults import Action, ActiveFaults
from stormshift.engines.local.maps import LocalMaps
from stormshift.engines.local.scheduler import TICK, Clock
from stormshift.engines.local.tracker import TupleTracker, msg_key, spout_lineage
from stormshift.engines.logs import forward_logs
from stormshift.engines.summary import RunSummary
from stormshift.errors import ComponentFailure
from stormshift.metrics.board import Board
from stormshift.state.maps import enter_scope, leave_scope
from stormshift.topology.graph import TopologyGraph

__all__ = ["TaskSet"]


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
        sink: Sink | None,
        track_duplicates: bool,
        drop_queue_on_crash: bool,
        max_replays: int | None = None,
        restart_on_crash: bool = True,
    ) -> None:
        self.graph = graph
        self.summary = summary
        # each bolt's keyed state maps, the scope of every call into it (``maps.py``)
        self.maps = {comp.name: LocalMaps() for comp in graph.bolts}
        self.stats = summary.components
        # the bolt task inside a call (``_execute``) and its acks + fails before it
        self.executing: tuple[TaskKey, int] | None = None
        self.board = Board.for_graph(graph, "local")  # the same counters per task (metrics/)
        self.figures = self.board.tasks
        self.acker = acker
        self.clock = clock
        self.tracker = TupleTracker(seed)
        self.delivery = Delivery(
            graph,
            self.tracker,
            summary,
            keep_outputs=keep_outputs,
            sink=sink,
            track_duplicates=track_duplicates,
        )
        self.queues = self.delivery.queues
        self.conf_overrides = conf_overrides
        self.acking = acking
        self.track_duplicates = track_duplicates
        self.drop_queue_on_crash = drop_queue_on_crash
        self.restart_on_crash = restart_on_crash
        self.max_replays = max_replays
        self.fail_counts: dict[tuple[str, int, Hashable], int] = {}
        self.hosts: dict[TaskKey, Any] = {}
        self.callbacks: deque[tuple[Tree, bool]] = deque()
        self.seen_msg_ids: dict[TaskKey, set[Hashable]] = {}
        self.executed: dict[str, set[int]] = {c.name: set() for c in graph.bolts}
        self.max_pending: dict[str, int | None] = {}
        self.task_ids = {(c.name, i): c.task_id(i) for c in graph for i in range(c.par)}
        self._spout_keys = [(c.name, i) for c in graph.spouts for i in range(c.par)]
        self._bolt_keys = [(c.name, i) for c in graph.bolts for i in range(c.par)]
        # --max-tuples: new tuples each spout task took, its target (the engine sets it), and
        # emits past the target, held for a larger target (the Spark engine's log keeps them)
        self.taken: dict[TaskKey, int] = dict.fromkeys(self._spout_keys, 0)
        self.targets: dict[TaskKey, int] | None = None
        self.held: dict[TaskKey, deque[Any]] = {k: deque() for k in self._spout_keys}

    # -- lifecycle ----------------------------------------------------------
    def _new_host(self, key: TaskKey) -> Any:
        host = host_component(self.graph, key[0], key[1], conf_overrides=self.conf_overrides)
        host.open()
        return host

    def open_all(self) -> None:
        for comp in self.graph:
            value = {**comp.config, **self.conf_overrides}.get("topology.max.spout.pending")
            self.max_pending[comp.name] = int(value) if value else None
            for task_index in range(comp.par):
                self.hosts[(comp.name, task_index)] = self._new_host((comp.name, task_index))
        for key in self._spout_keys:  # Storm activates an active topology's spouts at start
            self.seen_msg_ids[key] = set()
            self._spout_call(key, "activate")

    def deactivate_spouts(self) -> None:
        for key in self._spout_keys:
            self._spout_call(key, "deactivate")

    def instances(self, component: str) -> list[Any]:
        return [
            self.hosts[(component, i)].instance for i in range(self.graph.component(component).par)
        ]

    def tick_intervals(self) -> dict[str, float]:
        """Bolts with tick tuples configured (``topology.tick.tuple.freq.secs``), in seconds."""
        hosts = self.hosts
        return {k[0]: float(hosts[k].tick_interval_secs)
                for k in self._bolt_keys if hosts[k].tick_interval_secs}

    def tickless_intervals(self) -> dict[TaskKey, float]:
        """TicklessBatchingBolt tasks and their ``secs_between_batches``."""
        return {
            k: float(self.hosts[k].tickless_interval_secs)
            for k in self._bolt_keys
            if self.hosts[k].is_tickless
        }

    def unfinished_spouts(self) -> list[str]:
        """Spouts with a task that never signalled end of input."""
        return sorted({k[0] for k in self._spout_keys if not self.hosts[k].exhausted})

    def all_spouts_exhausted(self) -> bool:
        return all(self.spout_ended(k) for k in self._spout_keys)

    def idle(self) -> bool:
        return not self.callbacks and not self.delivery.pending()

    # -- spouts -------------------------------------------------------------
    def pull_spouts(self) -> tuple[bool, bool]:
        """One ``next_tuple`` per spout task allowed to emit: (emitted?, any asked?)."""
        emitted = asked = False
        for key in self._spout_keys:
            if self.targets is not None and self.taken[key] >= self.targets[key]:
                continue
            if self.held[key]:
                asked = True
                emitted = self._release_held(key) or emitted
                continue
            limit = self.max_pending[key[0]]
            if self.hosts[key].exhausted or (
                limit is not None and self.acker.pending(*key) >= limit
            ):
                continue
            asked = True
            emitted = self._spout_call(key, "next_tuple") or emitted
        return emitted, asked

    def _spout_call(self, key: TaskKey, method: str, *args: Any) -> bool:
        """Call a spout host, then apply its outbox; True if it emitted."""
        host = self.hosts[key]
        started = time.perf_counter()
        try:
            getattr(host, method)(*args)
        except ComponentFailure as exc:
            self._busy(key, started)
            self._spout_crashed(key, exc)
            return False
        self._busy(key, started)
        return self._apply_spout(key)

    def _apply_spout(self, key: TaskKey) -> bool:
        box = self.hosts[key].outbox
        stats = self.stats[key[0]]
        self._take_spout_report(key)
        self._note_side_effects(stats.name, box, task=key[1])
        emits = box.emits
        held = self.held[key]
        for emit in emits:
            if held or not self._spout_emit(key, emit):
                held.append(emit)
            else:
                stats.tuples_out += 1
                self.figures[key].tuples_out += 1
        emitted = bool(emits)
        emits.clear()
        return emitted

    def _take_spout_report(self, key: TaskKey) -> None:
        """A built-in spout's records read and dead letters since the last call
        (``ReplayableSpout.take_spout_report``): Storm has no dead-letter store, so the
        local engine keeps them in the summary, as the Spark engine's Redis stream has
        them (``RunSummary.add_spout_dead_letter``)."""
        take = getattr(self.hosts[key].instance, "take_spout_report", None)
        if take is None:
            return
        read, letters = take()
        stats = self.stats[key[0]]
        stats.records_read += read
        self.figures[key].dead_lettered += len(letters)  # the metrics, as Spark's feed.py
        for err in letters:
            self.summary.add_spout_dead_letter(key[0], key[1], err.kind, err.position,
                                               err.values, f"{type(err).__name__}: {err}")

    def _release_held(self, key: TaskKey) -> bool:
        """Deliver held emits, oldest first, while the task's target allows."""
        held, stats = self.held[key], self.stats[key[0]]
        delivered = False
        while held and self._spout_emit(key, held[0]):
            held.popleft()
            stats.tuples_out += 1
            self.figures[key].tuples_out += 1
            delivered = True
        return delivered

    def spout_ended(self, key: TaskKey) -> bool:
        """The task's spout ended and holds no emit past its target."""
        return bool(self.hosts[key].exhausted) and not self.held[key]

    def _spout_emit(self, key: TaskKey, emit: Any) -> bool:
        """Deliver one spout emit; False for a new tuple past the task's ``--max-tuples``
        target (one ``next_tuple`` emitted several): it is held, not delivered."""
        name, source_task_id = key[0], self.task_ids[key]
        mkey = None if emit.msg_id is None else msg_key(emit.msg_id)
        seen = self.seen_msg_ids[key]
        new = mkey is None or mkey not in seen
        if new:
            if self.targets is not None and self.taken[key] >= self.targets[key]:
                return False
            self.taken[key] += 1
            self.summary.spout_tuples += 1
        if mkey is None:  # unreliable: no tree
            self.delivery.spout_emit(name, source_task_id, emit, None, None)
            return True
        if new:
            seen.add(mkey)
        else:
            self.stats[name].replays += 1
        if not self.acking:  # topology.acker.executors = 0: Storm acks at once
            self.delivery.spout_emit(name, source_task_id, emit, None, None)
            self.callbacks.append((Tree(0, name, key[1], emit.msg_id, 0, 0), True))
            return True
        root = self.tracker.new_id()
        lineage = spout_lineage(name, emit.stream, mkey) if self.track_duplicates else None
        xor = self.delivery.spout_emit(name, source_task_id, emit, root, lineage)
        done = self.acker.init(root, name, key[1], emit.msg_id, xor, self.clock.now_ms())
        if done is not None:
            self.callbacks.append((done, True))
        return True

    def _spout_crashed(self, key: TaskKey, exc: ComponentFailure) -> None:
        """A spout process died: its pending trees are forgotten, a fresh instance opens."""
        box = self.hosts[key].outbox
        self._take_spout_report(key)  # what the dead instance read and dead-lettered counts
        self.summary.problems.add_exception(key[0], exc)
        if not self._note_side_effects(key[0], box, digest=False, task=key[1]):
            self.delivery.record_error(key[0], str(exc))
        box.drain()
        self.stats[key[0]].restarts += 1
        self.acker.forget_task(*key)
        self.hosts[key] = self._new_host(key)
        self._spout_call(key, "activate")

    def tree_done(self, tree: Tree, ok: bool, timed_out: bool = False) -> None:
        """Queue the spout callback of a finished tree."""
        if timed_out:
            self.stats[tree.spout].timeouts += 1
        self.callbacks.append((tree, ok))

    def run_callbacks(self) -> bool:
        """Deliver queued ``ack``/``fail`` calls to spouts (replays emit here)."""
        did = bool(self.callbacks)
        while self.callbacks:
            tree, ok = self.callbacks.popleft()
            stats = self.stats[tree.spout]
            fig = self.figures[(tree.spout, tree.task_index)]
            if ok:
                stats.acks += 1
                fig.acks += 1
                if tree.root:  # tracked trees only (not acker.executors = 0)
                    stats.completed_trees += 1
                    stats.complete_latency_total_ms += self.clock.now_ms() - tree.started_ms
            else:
                stats.fails += 1
                fig.fails += 1
                if self._give_up(tree):
                    stats.gave_up += 1
                    continue
            self._spout_call((tree.spout, tree.task_index), "ack" if ok else "fail", tree.msg_id)
        return did

    def _give_up(self, tree: Tree) -> bool:
        """True once ``tree``'s msg_id failed more than ``max_replays`` times: its spout is
        not told (it would replay it again), the tuple counts as given up."""
        if self.max_replays is None or tree.msg_id is None:
            return False
        key = (tree.spout, tree.task_index, msg_key(tree.msg_id))
        n = self.fail_counts[key] = self.fail_counts.get(key, 0) + 1
        return n > self.max_replays

    # -- bolts --------------------------------------------------------------
    def enqueue_tick(self, component: str) -> None:
        for task_index in range(self.graph.component(component).par):
            self.queues[(component, task_index)].append(TICK)

    def flush_tickless(self, component: str, task_index: int) -> None:
        self._call_bolt((component, task_index), lambda host: host.flush_tickless(), None)

    def end_of_input(self, component: str) -> None:
        """``end_of_input()`` on each task of ``component`` whose instance defines it."""
        for task_index in range(self.graph.component(component).par):
            key = (component, task_index)
            if self.hosts[key].wants_end_of_input:
                self._call_bolt(key, lambda host: host.end_of_input(), None)

    def window_counters(self, component: str) -> dict[str, int]:
        """Windowed bolts' late-data counters, summed over the component's tasks."""
        total: dict[str, int] = {}
        if not self.graph.component(component).capabilities.windowed:
            return total
        for inst in self.instances(component):
            if inst.windowing_state is not None:  # None: no tuple or pane yet
                for name, n in inst.window_counters().items():
                    total[name] = total.get(name, 0) + n
        return total

    def window_watermark_ms(self, component: str) -> int | None:
        """A windowed bolt's watermark: the lowest of its tasks' (each task tracks its own
        inputs here; the Spark engine keeps one tracker per bolt), None if not windowed."""
        if not self.graph.component(component).capabilities.windowed:
            return None
        marks = [inst.watermark_ms for inst in self.instances(component)
                 if inst.windowing_state is not None]
        return min(marks) if marks else None

    def source_lags(self, component: str) -> list[Any]:
        """A replayable spout's lag per task at its cursor (``spouts/lag.py``); empty for
        other spouts, or a replayable spout of the user's that cannot count it."""
        lags: list[Any] = []
        if not self.graph.component(component).capabilities.has("local_lag"):
            return lags
        for inst in self.instances(component):
            try:
                lag = inst.local_lag()
            except NotImplementedError:
                lag = None
            if lag is not None:
                lags.append(lag)
        return lags

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
        """Execute one tuple; ``executing`` names the task until it is settled, so a run
        stopped inside the call (Ctrl-C, SIGTERM) counts that tuple in flight."""
        stats = self.stats[key[0]]
        self.executing = (key, stats.acks + stats.fails)
        self._execute_one(key, tup, action)
        self.executing = None

    def _execute_one(self, key: TaskKey, tup: Any, action: Action) -> None:
        stats, fig = self.stats[key[0]], self.figures[key]
        stats.tuples_in += 1
        fig.tuples_in += 1
        if action is Action.CRASH:
            self.delivery.record_error(
                key[0], f"{key[0]}[{key[1]}]: injected crash (process killed) at tuple {tup.id}"
            )
            self.summary.problems.add(key[0], "InjectedCrash", "process killed by the fault plan")
            self._bolt_crashed(key)
            return
        if action is Action.FAIL_BEFORE:
            stats.fails += 1
            fig.fails += 1
            self._fail_tuple(tup.id)
            return
        if self.track_duplicates and self.tracker.executed_again(tup.id, self.executed[key[0]]):
            stats.duplicates += 1
        # the per-tuple kernel, one tuple at a time with Storm's semantics (adapters/kernel.py)
        self._call_bolt(key, lambda host: host.kernel.execute(tup),
                        tup.id if action is Action.FAIL_AFTER else None, timed=True)

    def _call_bolt(self, key: TaskKey, call: Callable[[Any], None], extra_fail: str | None,
                   timed: bool = False) -> None:
        """``call(host)``, then apply its outbox; a ``ComponentFailure`` crashes the task (its
        emits and fails so far are applied: Storm sent them before the process died).
        ``timed``: an execute, whose time is an execute-latency sample."""
        started = time.perf_counter()
        scope = enter_scope(self.maps[key[0]])
        try:
            call(self.hosts[key])
        except ComponentFailure as exc:
            self._busy(key, started, timed)
            self.summary.problems.add_exception(key[0], exc)
            if not self._apply_bolt(key, None, digest=False):
                self.delivery.record_error(key[0], str(exc))
            self._bolt_crashed(key)
            return
        finally:
            leave_scope(scope)
        self._busy(key, started, timed)
        self._apply_bolt(key, extra_fail)

    def _apply_bolt(self, key: TaskKey, extra_fail: str | None, digest: bool = True) -> int:
        """Apply a bolt's outbox: emits first (anchoring needs the inputs), then fails, then acks.

        Returns the number of errors the bolt reported.
        """
        box = self.hosts[key].outbox
        stats, fig = self.stats[key[0]], self.figures[key]
        errors = self._note_side_effects(key[0], box, digest, task=key[1])
        source_task_id = self.task_ids[key]
        for ordinal, emit in enumerate(box.emits):
            self.delivery.bolt_emit(key[0], source_task_id, emit, ordinal)
        stats.tuples_out += len(box.emits)
        fig.tuples_out += len(box.emits)
        box.emits.clear()
        if extra_fail is not None:
            stats.fails += 1
            fig.fails += 1
            self._fail_tuple(extra_fail)
        if box.fails:
            stats.fails += len(box.fails)
            fig.fails += len(box.fails)
            for tuple_id in box.fails:
                self._fail_tuple(tuple_id)
            box.fails.clear()
        if box.acks:
            stats.acks += len(box.acks)
            fig.acks += len(box.acks)
            for tuple_id in box.acks:
                for root, xor in self.tracker.ack(tuple_id):
                    tree = self.acker.ack(root, xor)
                    if tree is not None:
                        self.callbacks.append((tree, True))
            box.acks.clear()
        return errors

    def _fail_tuple(self, tuple_id: str) -> None:
        for root in self.tracker.fail(tuple_id):
            tree = self.acker.fail(root)
            if tree is not None:
                self.callbacks.append((tree, False))

    def _bolt_crashed(self, key: TaskKey) -> None:
        """The task's process died: its queue and held tuples are lost, a fresh instance opens.

        Without ``restart_on_crash`` (a shadow's *no-restart* re-run of the legacy side,
        ``shadow/run.py``) the raise only fails its tuple (already done: ``auto_fail``) and the
        instance, its memory and its queue live on: the run Storm would have had if the
        error had not cost the task its process, so what a restart alone lost shows apart."""
        if not self.restart_on_crash:
            return
        stats = self.stats[key[0]]
        stats.restarts += 1
        if self.drop_queue_on_crash:
            queue = self.queues[key]
            stats.lost += sum(1 for item in queue if item is not TICK)
            queue.clear()
        self.tracker.drop_task(*key)
        self.hosts[key] = self._new_host(key)

    # -- bookkeeping --------------------------------------------------------
    def _note_side_effects(self, component: str, box: Any, digest: bool = True,
                           task: int = 0) -> int:
        """Count reported errors (into the digest unless the caller has the exception
        itself), forward logs; returns the number of errors."""
        errors = len(box.errors)
        if errors:
            for message in box.errors:
                self.delivery.record_error(component, f"{component}: {message}")
                if digest:
                    self.summary.problems.add_text(component, str(message))
            box.errors.clear()
        if box.logs:
            forward_logs(component, task, box.logs)
            box.logs.clear()
        if box.metrics or box.syncs:
            box.metrics.clear()
            box.syncs = 0
        return errors

    def _busy(self, key: TaskKey, started: float, timed: bool = False) -> None:
        """Add the call's time to the component's and the task's busy time (and, for an
        execute, to the task's latency histogram)."""
        elapsed = time.perf_counter() - started
        self.stats[key[0]].busy_ms += elapsed * 1000
        fig = self.figures[key]
        fig.busy_ms += elapsed * 1000
        if timed:
            fig.latency.observe_ns(int(elapsed * 1e9))
