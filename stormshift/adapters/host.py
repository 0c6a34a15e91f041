"""Hosting one task of a user's streamparse Spout or Bolt in-process.

A host owns the user's instance, its ``Outbox`` and its ``Router``. Call
order: construct the host, ``open()`` (runs ``initialize(conf, context)``),
then drive it (spouts: ``next_tuple``/``ack``/``fail``; bolts: ``execute``,
``tick``, ``flush_tickless``) and ``outbox.drain()`` after each call or
batch. Each driving call reproduces pystorm's run loop for one command
(``_current_tups``, auto ack/anchor/fail, BatchingBolt ticks) without a pipe;
``execute`` is the per-tuple kernel's (``kernel.py``, shared with the Spark task).

A user exception is reported as pystorm would (its ``_handle_run_exception``:
an error in the outbox, auto-fail of the current tuple(s)) and re-raised as
``ComponentFailure``. Hosts never ``chdir``: run their calls inside
``working_dir(graph)`` (``open()`` does so itself).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable
from typing import Any

from stormshift.adapters.context import tick_interval_secs
from stormshift.adapters.fastpath import (
    AnchorCache,
    Deliver,
    bolt_ack_fail,
    bolt_emit,
    spout_emit,
)
from stormshift.adapters.hostbase import EMPTY, EndOfInput, HostBase, working_dir
from stormshift.adapters.kernel import Kernel
from stormshift.adapters.tuples import Tuple, TupleFactory, tick_tuple
from stormshift.errors import ComponentFailure, InfraError, StormshiftError
from stormshift.topology.capabilities import Batching, EmitPath
from stormshift.topology.graph import TopologyGraph

__all__ = ["BoltHost", "EndOfInput", "SpoutHost", "host_component", "working_dir"]


class SpoutHost(HostBase):
    """One spout task: ``next_tuple`` / ``ack`` / ``fail`` / ``activate`` / ``deactivate``."""

    kind = "spout"

    def __init__(self, graph: TopologyGraph, component: str, task_index: int, **kwargs: Any):
        super().__init__(graph, component, task_index, **kwargs)
        self._capture()
        path = self.emit_path
        if path is EmitPath.SPOUT or path is EmitPath.RELIABLE:
            self.instance.emit = spout_emit(self.instance, self.emitter, path is EmitPath.RELIABLE)
        self.exhausted = False

    def next_tuple(self) -> None:
        if self.exhausted:
            return
        done = self.completion.done
        if done:
            done.clear()
        try:
            self.instance.next_tuple()
        except (StopIteration, EndOfInput):
            self.exhausted = True
        except InfraError:  # a built-in source's infrastructure is away: the run's error,
            raise  # one line (exit 2), not a spout crash to restart for ever
        except Exception as exc:
            raise self._failure(exc, "next_tuple", None) from exc

    def _call(self, name: str, *args: Any) -> None:
        try:
            getattr(self.instance, name)(*args)
        except Exception as exc:
            raise self._failure(exc, name, None) from exc

    def ack(self, msg_id: Any) -> None:
        self._call("ack", msg_id)

    def fail(self, msg_id: Any) -> None:
        # A spout that said it was done may replay what failed: Storm would ask it again.
        self.exhausted = False
        self._call("fail", msg_id)

    def activate(self) -> None:
        self._call("activate")

    def deactivate(self) -> None:
        self._call("deactivate")


class BoltHost(HostBase):
    """One bolt task: ``execute`` (one tuple), ``execute_many``, ``tick``, ``flush_tickless``,
    ``end_of_input`` (for instances that define it)."""

    kind = "bolt"

    def __init__(self, graph: TopologyGraph, component: str, task_index: int, **kwargs: Any):
        super().__init__(graph, component, task_index, **kwargs)
        self.tuple_factory = TupleFactory(graph, self.name)
        self._capture(self.tuple_factory.types)
        inst = self.instance
        caps = self.capabilities
        self.batching = caps.batching is not Batching.NONE
        self.is_tickless = caps.batching is Batching.TICKLESS
        self.tick_interval_secs = tick_interval_secs(self.conf)
        self.tickless_interval_secs = caps.secs_between_batches if self.is_tickless else None
        self.anchor_cache = AnchorCache()
        self.deliver_to(None)
        ack, fail = bolt_ack_fail(self.outbox, self.completion)
        if self.fast_ack:
            inst.ack = ack
        if self.fast_fail:
            inst.fail = fail
        self.execute: Callable[[Tuple], None] = self._not_open  # type: ignore[method-assign]
        self.kernel: Kernel | None = None  # the per-tuple kernel, from open()

    def deliver_to(self, deliver: Deliver | None) -> bool:
        """Route the fast path's emits to ``deliver(stream, values, targets)`` (None: the
        outbox). False when the user's class defines ``emit``: its emits stay in the outbox."""
        path = self.emit_path
        if path is not EmitPath.BOLT and path is not EmitPath.BATCHING:
            return False
        self.instance.emit = bolt_emit(
            self.instance, self.emitter, self.anchor_cache, path is EmitPath.BATCHING, deliver
        )
        return True

    def _not_open(self, tup: Tuple) -> None:
        raise StormshiftError(f"component {self.name!r}: call open() before execute()")

    def open(self) -> None:
        super().open()
        self.kernel = Kernel(self)
        self.execute = self.kernel.execute  # type: ignore[method-assign]

    def new_tuple(self, source: str, stream: str, source_task_id: int, values: Any) -> Tuple:
        """A tuple for this bolt with a fresh id from ``tuple_ids``."""
        return self.tuple_factory.make(source, stream, source_task_id, values, self.tuple_ids())

    def execute_many(
        self, tuples: Iterable[Tuple], on_failure: Callable[[ComponentFailure], None] | None = None
    ) -> int:
        """``execute`` each tuple in order (``Kernel.execute_many``); returns how many ran."""
        if self.kernel is None:
            raise StormshiftError(f"component {self.name!r}: call open() before execute_many()")
        return self.kernel.execute_many(tuples, on_failure)

    def tick(self) -> None:
        """Deliver one tick tuple (``process_tick``), as pystorm's run loop does."""
        inst = self.instance
        tick = tick_tuple(self.tuple_ids())
        box = self.outbox
        marks = (len(box.emits), len(box.acks), len(box.fails))
        self.completion.done.clear()
        inst._current_tups = [tick]
        failure: ComponentFailure | None = None
        try:
            inst.process_tick(tick)
            if not self.batching and inst.auto_ack:
                inst.ack(tick)
        except Exception as exc:  # noqa: BLE001 - any user error becomes a ComponentFailure
            # A BatchingBolt's flush failed: the failure carries the batch being flushed.
            current = [t for t in inst._current_tups if t is not tick]
            failure = self._failure(exc, "process_tick",
                                    current if self.batching and current else tick)
        finally:
            inst._current_tups = EMPTY
            self._scrub_tick(tick.id, *marks)
        if failure is not None:
            raise failure from failure.cause

    def flush_tickless(self) -> None:
        """Run a TicklessBatchingBolt's pending batches (its timer thread's job)."""
        if not self.is_tickless:
            raise StormshiftError(f"component {self.name!r} is not a TicklessBatchingBolt")
        inst = self.instance
        self.completion.done.clear()
        failure: ComponentFailure | None = None
        try:
            with inst._batch_lock:
                inst.process_batches()
        except Exception as exc:  # noqa: BLE001 - any user error becomes a ComponentFailure
            failure = self._failure(exc, "process_batch", list(inst._current_tups))
        finally:
            inst._current_tups = EMPTY
        if failure is not None:
            raise failure from failure.cause

    @property
    def wants_end_of_input(self) -> bool:
        """The class defines ``end_of_input()`` (windowed bolts: flush every window)."""
        return self.capabilities.end_of_input

    def end_of_input(self) -> None:
        """Tell the instance no more input will come (no current tuple: emits are unanchored)."""
        self.call_hook("end_of_input")

    def call_hook(self, name: str, *args: Any) -> None:
        """Call an engine hook of the instance (``end_of_input``, a windowed bolt's
        ``start_batch``) outside any tuple: its emits are unanchored; a raise becomes a
        ``ComponentFailure``."""
        inst = self.instance
        self.completion.done.clear()
        inst._current_tups = EMPTY
        try:
            getattr(inst, name)(*args)
        except Exception as exc:
            raise self._failure(exc, name, None) from exc

    def _failure(
        self, exc: BaseException, call: str, tup: Any, report: bool = True
    ) -> ComponentFailure:
        failure = super()._failure(exc, call, tup, report)
        self._reset_batches_after_crash()
        return failure

    def _reset_batches_after_crash(self) -> None:
        """pystorm failed every batched tuple and its process would now exit:
        start from a fresh batching state so failed tuples are never acked later."""
        inst = self.instance
        if getattr(self, "batching", False) and inst.exit_on_exception:
            inst._batches = defaultdict(list)
            inst._tick_counter = 0
            inst._current_key = None

    def _scrub_tick(self, tick_id: str, n_emits: int, n_acks: int, n_fails: int) -> None:
        """Storm never tracks tick tuples: drop their acks/fails and anchors."""
        box = self.outbox
        box.acks[n_acks:] = [t for t in box.acks[n_acks:] if t != tick_id]
        box.fails[n_fails:] = [t for t in box.fails[n_fails:] if t != tick_id]
        for emit in box.emits[n_emits:]:
            if tick_id in emit.anchors:
                emit.anchors = tuple(a for a in emit.anchors if a != tick_id)


def host_component(
    graph: TopologyGraph, component: str, task_index: int, **kwargs: Any
) -> SpoutHost | BoltHost:
    """A ``SpoutHost`` or ``BoltHost`` for ``component``'s task ``task_index``."""
    if graph.component(component).is_spout:
        return SpoutHost(graph, component, task_index, **kwargs)
    return BoltHost(graph, component, task_index, **kwargs)
