"""LocalEngine: run a topology tuple at a time, the way Storm would.

This is the reference ("legacy") side of every comparison: one hosted
instance per task, FIFO receive queue per bolt task, Storm's XOR acker,
``topology.max.spout.pending`` per spout task, message timeouts, tick tuples
in the receive queue, ``activate``/``deactivate``. Single-threaded and
deterministic: with a ``SimClock`` and a seed, two runs give identical outputs.

One scheduler *round*: fire due timers (timeouts -> ``spout.fail``, ticks,
TicklessBatchingBolt flushes); call ``next_tuple`` once on each spout task
that may emit; let every bolt task, in topological order, drain its queue;
deliver ``ack``/``fail`` to spouts (a reliable spout's replay happens here).

Bounded runs (the engine is a bounded simulation, Storm is not): ``max_tuples``,
``duration_secs``, sources exhausted or idle, a stop request (``bounds.py`` says each).
Whichever comes first ends the *pull* phase; then, like ``storm kill -w``,
spouts are deactivated and the run *drains*: queues are processed and it ends
when no tree is pending (complete, failed or timed out, replays included),
or after ``drain_secs`` with trees still pending (default 10 x message
timeout: room for a reliable spout's replays after timeouts, yet a bound on a
spout that replays forever; the summary then reports the pending trees).
A spout tuple whose tree failed more than ``stormshift.max_replays`` times
(default 10) is no longer handed back to its spout's ``fail`` (Storm would
replay it forever): it counts as *given up*, so a bolt failing every tuple
deterministically cannot keep a bounded run alive. When the sources are exhausted
(or with ``final_tick=True``) the engine then calls ``end_of_input()`` on
every bolt task whose instance defines it, upstream first (windowed bolts
fire every window: ``stormshift.windows``); Storm has no such call. Otherwise
nothing special happens at the end, as in Storm; ``final_tick=True``
delivers one last tick (and tickless flush) to bolts that use them, in
topological order, so batching bolts flush what they hold.

A bolt that raises kills its (Python) process, as on Storm: the host sends
the fail for the current tuple (``auto_fail``), the task's queue and
everything its instance held are lost (those trees time out), and the
instance is re-created with a fresh ``initialize``. Storm restarts the whole
worker; here only that task restarts -- the smallest failure Storm can have.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any, cast

from stormshift.adapters.host import working_dir
from stormshift.engines import external
from stormshift.engines.local.acker import Acker
from stormshift.engines.local.bounds import EXHAUSTED, idle_sources, pull_bound, targets_now
from stormshift.engines.local.faults import ActiveFaults, Fault, FaultPlan
from stormshift.engines.local.scheduler import Clock, Periodic, WallClock
from stormshift.engines.local.tasks import TaskSet
from stormshift.engines.summary import ComponentState, RunSummary
from stormshift.metrics.board import Board
from stormshift.state.component import state_of, user_state
from stormshift.topology.graph import TopologyGraph

__all__ = ["LocalEngine"]


def _optional_int(value: Any) -> int | None:
    return None if value is None or value == "" else int(value)

Progress = Callable[[str], None]  # gets RunSummary.progress_line(), like the Spark engine's


class LocalEngine:
    """Storm semantics in one process. ``run()`` once per engine; with ``read_state=True``
    its summary's ``final_state`` holds each bolt task's user attributes and each bolt's
    keyed state maps (in memory here: ``maps.py``) at the end."""

    def __init__(
        self,
        graph: TopologyGraph,
        *,
        clock: Clock | None = None,
        seed: int = 0,
        faults: FaultPlan | Iterable[Fault] | None = None,
        final_tick: bool = False,
        drain_secs: float | None = None,
        conf_overrides: Mapping[str, Any] | None = None,
        keep_outputs: bool = True,
        sink: Callable[[str, str, list[Any]], None] | None = None,
        track_duplicates: bool = True,
        drop_queue_on_crash: bool = True,
        progress_interval_secs: float = 0.5,
        read_state: bool = False,
        on_metrics: Callable[[Board], None] | None = None,
        restart_on_crash: bool = True,
    ) -> None:
        self.graph = graph
        self.on_metrics = on_metrics  # gets the metrics board at each progress interval
        self.clock: Clock = clock if clock is not None else WallClock()
        self.plan = FaultPlan.of(faults)
        self.plan.check(dict(graph.components))
        self.final_tick = final_tick
        self.conf = {**graph.config, **(conf_overrides or {})}
        timeout_secs = float(self.conf.get("topology.message.timeout.secs", 30))
        timeouts_on = bool(self.conf.get("topology.enable.message.timeouts", True))
        self.timeout_ms = int(timeout_secs * 1000)
        self.acker = Acker(self.timeout_ms if timeouts_on else None)
        self.drain_ms = int((drain_secs if drain_secs is not None else 10 * timeout_secs) * 1000)
        self.spout_wait_ms = max(
            1, int(self.conf.get("topology.sleep.spout.wait.strategy.time.ms", 1))
        )
        self.progress_ms = max(1, int(progress_interval_secs * 1000))
        self.read_state = read_state  # fill RunSummary.final_state at the end (shadow runs)
        self.summary = RunSummary.for_graph(graph, "local")
        self.tasks = TaskSet(
            graph,
            self.summary,
            self.acker,
            self.clock,
            seed=seed,
            conf_overrides=dict(conf_overrides or {}),
            acking=int(self.conf.get("topology.acker.executors", 1) or 0) != 0,
            keep_outputs=keep_outputs,
            sink=sink,
            track_duplicates=track_duplicates,
            drop_queue_on_crash=drop_queue_on_crash,
            max_replays=_optional_int(self.conf.get("stormshift.max_replays", 10)),
            restart_on_crash=restart_on_crash,
        )
        self.idle_ms = int(float(self.conf.get("stormshift.idle_timeout_secs", 10)) * 1000)
        self._faults: ActiveFaults = self.plan.start()
        self._timers = Periodic()
        self._ran = False
        self._stop = threading.Event()
        self._stop_reason = ""
        self._reported: set[tuple[str, str, str, str]] = set()

    # -- public -------------------------------------------------------------
    def instances(self, component: str) -> list[Any]:
        """The current hosted user objects of ``component``, by task index."""
        return self.tasks.instances(component)

    def snapshots(self, component: str) -> list[dict[str, Any]]:
        """Each task instance's state attributes by name, as every engine takes them
        (``state/component``: not pystorm's own, not what cannot be pickled)."""
        return [state_of(obj) for obj in self.instances(component)]

    @property
    def injected(self) -> list[str]:
        """Faults that fired, in order (e.g. ``"crash count[0] at its tuple 5"``)."""
        return list(self._faults.injected)

    def request_stop(self, reason: str) -> None:
        """End the pull phase at the next round, then drain as for any bound (module doc).
        Safe from another thread; a call into user code that never returns is not cut."""
        self._stop_reason = self._stop_reason or reason
        self._stop.set()

    def run(
        self,
        max_tuples: int | None = None,
        duration_secs: float | None = None,
        on_progress: Progress | None = None,
    ) -> RunSummary:
        """Run until a bound is reached and the run drained; return the summary."""
        if self._ran:
            raise RuntimeError("a LocalEngine runs once; build a new one for another run")
        if max_tuples is not None and max_tuples < 0:
            raise ValueError(f"max_tuples must be >= 0, got {max_tuples}")
        self._ran = True
        wall_start = time.perf_counter()
        start_ms = self.clock.now_ms()
        duration_ms = None if duration_secs is None else int(duration_secs * 1000)
        redirected = external.redirect_for(self.graph)  # a shadow side's scratch Redis, files
        try:
            with working_dir(self.graph):  # as Storm runs components (hosts never chdir)
                self.tasks.open_all()
                self._start_timers(start_ms)
                try:
                    self._loop(start_ms, max_tuples, duration_ms, on_progress, wall_start)
                except KeyboardInterrupt:
                    self.summary.stop_reason = "interrupted"
                    self._count_in_flight()
        finally:
            if redirected:
                external.release()
        self._refresh(wall_start, start_ms)
        self._spout_reads()
        for (name, _), queue in self.tasks.queues.items():
            self.summary.components[name].queued += len(queue)
        for comp in self.graph.bolts:
            self.summary.components[comp.name].windows = self.tasks.window_counters(comp.name)
            if self.read_state:
                tasks = [user_state(obj) for obj in self.instances(comp.name)]
                self.summary.final_state[comp.name] = ComponentState(
                    tasks, self.tasks.maps[comp.name].values())
        if self.on_metrics is not None:
            self.on_metrics(self.metrics_board())
        if on_progress is not None:
            on_progress(self.summary.progress_line())
            self._report_new_errors(on_progress)
        return self.summary

    def _spout_reads(self) -> None:
        """Built-in spouts' end figures for the accounting: records read but held past a
        ``--max-tuples`` target are not read (their spout re-reads them on the next run),
        and a bounded source with records left when the run says its sources are exhausted
        is ``unread`` -- a spout that stopped early must never read as "holds"."""
        done = self.summary.stop_reason.startswith(EXHAUSTED)
        for comp in self.graph.spouts:
            stats = self.summary.components[comp.name]
            built_in = [i for i in self.instances(comp.name) if hasattr(i, "take_spout_report")]
            if not built_in:
                continue
            for task_index in range(comp.par):
                stats.records_read -= len(self.tasks.held[(comp.name, task_index)])
            for inst in built_in:
                if not done or not getattr(inst, "bounded", False):
                    continue
                try:
                    lag = inst.local_lag()
                except Exception:  # noqa: BLE001 - no figure (a source that cannot count)
                    lag = None
                if lag is not None:
                    stats.unread += sum(n or 0 for n in lag.records)
                stats.unread += len(getattr(inst, "_buffer", ()))

    def _count_in_flight(self) -> None:
        """The tuple a bolt task was executing when the run was stopped, if not settled."""
        if self.tasks.executing is None:
            return
        (name, _), settled_before = self.tasks.executing
        stats = self.summary.components[name]
        if stats.acks + stats.fails == settled_before:
            stats.in_flight += 1

    def metrics_board(self) -> Board:
        """The run's figures per task (``metrics/board.py``), as of the last refresh: the
        local engine has no batches, so a task's capacity is its busy share of the run."""
        board = self.tasks.board
        elapsed_ms = self.summary.elapsed_ms
        for fig in board.tasks.values():
            fig.capacity = min(fig.busy_ms / elapsed_ms, 1.0) if elapsed_ms > 0 else 0.0
        for comp in self.graph.bolts:
            counters = self.tasks.window_counters(comp.name)
            if counters:
                board.windows[comp.name] = counters
            watermark = self.tasks.window_watermark_ms(comp.name)
            if watermark is not None:
                board.watermarks_ms[comp.name] = watermark
        for comp in self.graph.spouts:
            for lag in self.tasks.source_lags(comp.name):
                board.set_lag(comp.name, lag)
        board.stop_reason = self.summary.stop_reason
        board.updated_ms = int(time.time() * 1000)
        return board

    def _report_new_errors(self, on_progress: Progress) -> None:
        """Each distinct error once, as soon as a progress line sees it."""
        for kind in self.summary.problems.kinds():
            key = (kind.component, kind.type, kind.message, kind.location)
            if key not in self._reported:
                self._reported.add(key)
                on_progress(f"error in {kind.component}: {kind.headline()}")

    # -- the loop -----------------------------------------------------------
    def _loop(
        self,
        start_ms: int,
        max_tuples: int | None,
        duration_ms: int | None,
        on_progress: Progress | None,
        wall_start: float,
    ) -> None:
        pulling, reason, drain_until_ms = True, "", 0
        next_progress_ms = start_ms + self.progress_ms
        seen_tuples, last_new_ms, replaying = -1, start_ms, False
        while True:
            now_ms = self.clock.now_ms()
            did = self._fire_timers(now_ms)
            if self.summary.spout_tuples != seen_tuples:
                seen_tuples, last_new_ms = self.summary.spout_tuples, now_ms
            if pulling:
                if max_tuples is not None:
                    self.tasks.targets = targets_now(self.graph, self.tasks, max_tuples)
                reason = pull_bound(self.tasks, self.summary, now_ms - start_ms, max_tuples,
                                    duration_ms)
                if not reason and self._stop.is_set():
                    reason = self._stop_reason
                if not reason and duration_ms is None:
                    reason = idle_sources(self.tasks, self.summary, self.acker, self.conf,
                                          now_ms - last_new_ms, self.idle_ms)
                if reason:
                    pulling, drain_until_ms = False, now_ms + self.drain_ms
                    # Spouts that ran out of input still replay what fails while draining.
                    replaying = reason == EXHAUSTED
                    if not replaying:
                        self.tasks.deactivate_spouts()
                    did = self.tasks.run_callbacks() or did
            pullable = self.tasks.pull_spouts() if pulling or replaying else None
            did = (pullable is not None and pullable[0]) or did
            did = self.tasks.run_bolts(self._faults) or did
            did = self.tasks.run_callbacks() or did
            if (on_progress or self.on_metrics) is not None and now_ms >= next_progress_ms:
                next_progress_ms = now_ms + self.progress_ms
                self._refresh(wall_start, start_ms)
                if self.on_metrics is not None:
                    self.on_metrics(self.metrics_board())
                if on_progress is not None:
                    on_progress(self.summary.progress_line())
                    self._report_new_errors(on_progress)
            if not pulling and self._drained() and not (replaying and self._reopened()):
                self.summary.stop_reason = reason
                break
            if not pulling and now_ms >= drain_until_ms:
                self.summary.stop_reason = (
                    f"{reason}; drain stopped after {self.drain_ms / 1000:g}s "
                    f"with {len(self.acker)} trees pending"
                )
                break
            if did:
                self.clock.round_done()
            elif not self._idle(now_ms, pulling, pullable, start_ms, duration_ms, drain_until_ms):
                self.summary.stop_reason = (
                    f"{reason or 'stalled'}; stalled with {len(self.acker)} trees pending "
                    "and nothing scheduled (no timeout, tick or bound can end the wait)"
                )
                break
        if replaying:
            self.tasks.deactivate_spouts()
        if reason == EXHAUSTED or self.final_tick:
            self._end_of_input()
        if self.final_tick:
            self._final_tick()

    def _reopened(self) -> bool:
        """A spout that had run out of input got a ``fail`` since: it may replay."""
        return not self.tasks.all_spouts_exhausted()

    def _drained(self) -> bool:
        return len(self.acker) == 0 and self.tasks.idle()

    def _idle(
        self,
        now_ms: int,
        pulling: bool,
        pullable: tuple[bool, bool] | None,
        start_ms: int,
        duration_ms: int | None,
        drain_until_ms: int,
    ) -> bool:
        """Wait for the next thing that can happen; False if nothing ever can."""
        deadlines = [
            t for t in (self._timers.next_ms(), self.acker.next_expiry_ms()) if t is not None
        ]
        if pulling and duration_ms is not None:
            deadlines.append(start_ms + duration_ms)
        if not pulling:
            deadlines.append(drain_until_ms)
        if pullable is not None and pullable[1]:
            deadlines.append(now_ms + self.spout_wait_ms)  # Storm's sleep spout wait strategy
        if not deadlines:
            return False
        self.clock.wait_ms(max(0, min(deadlines) - now_ms))
        return True

    # -- timers -------------------------------------------------------------
    def _start_timers(self, now_ms: int) -> None:
        for name, interval_secs in self.tasks.tick_intervals().items():
            self._timers.add(("tick", name), int(interval_secs * 1000), now_ms)
        for key, interval_secs in self.tasks.tickless_intervals().items():
            self._timers.add(("flush", key), int(interval_secs * 1000), now_ms)

    def _fire_timers(self, now_ms: int) -> bool:
        did = False
        for tree in self.acker.expire(now_ms):
            self.tasks.tree_done(tree, ok=False, timed_out=True)
            did = True
        for timer in self._timers.due(now_ms):
            kind, key = cast("tuple[str, Any]", timer)
            if kind == "tick":
                self.tasks.enqueue_tick(key)
            else:
                self.tasks.flush_tickless(*key)
            did = True
        return did

    def _end_of_input(self) -> None:
        """End of input: ``end_of_input()`` on bolts that define it (windowed bolts fire
        every window), upstream first, each component's emits settled before the next."""
        for comp in self.graph.bolts:
            self.tasks.end_of_input(comp.name)
            self._settle()

    def _final_tick(self) -> None:
        """One last tick / flush per bolt that uses them, upstream first."""
        ticks = self.tasks.tick_intervals()
        tickless = self.tasks.tickless_intervals()
        for comp in self.graph.bolts:
            if comp.name in ticks:
                self.tasks.enqueue_tick(comp.name)
            for task_index in range(comp.par):
                if (comp.name, task_index) in tickless:
                    self.tasks.flush_tickless(comp.name, task_index)
            self._settle()

    def _settle(self) -> None:
        while self.tasks.run_bolts(self._faults) | self.tasks.run_callbacks():
            pass

    def _refresh(self, wall_start: float, start_ms: int) -> None:
        self.summary.elapsed_ms = (time.perf_counter() - wall_start) * 1000
        self.summary.engine_time_ms = self.clock.now_ms() - start_ms
        self.summary.pending_trees = len(self.acker)

