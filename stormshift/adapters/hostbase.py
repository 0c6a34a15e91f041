"""What spout and bolt hosts share: construction, capture, open, failures.

See ``stormshift.adapters.host`` for the call order engines follow.
"""

from __future__ import annotations

import os
import traceback
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from stormshift.adapters.construct import construct, import_class, setup_instance
from stormshift.adapters.context import storm_conf, storm_context
from stormshift.adapters.fastpath import Completion, Emitter, capture_send_message
from stormshift.adapters.location import module_location, user_location
from stormshift.adapters.outbox import Outbox
from stormshift.adapters.routing import Router
from stormshift.adapters.tuples import IdGenerator, counter_ids
from stormshift.errors import ComponentFailure, EndOfInput
from stormshift.topology.capabilities import Batching, EmitPath, capabilities_of
from stormshift.topology.graph import TopologyGraph

__all__ = ["EMPTY", "EndOfInput", "HostBase", "user_location", "working_dir"]

EMPTY: list[Any] = []


@contextmanager
def working_dir(graph: TopologyGraph) -> Iterator[None]:
    """Run the block in ``graph.working_dir`` (as Storm runs components), then go back."""
    target = graph.working_dir
    if not target:
        yield
        return
    previous = os.getcwd()
    os.chdir(target)
    try:
        yield
    finally:
        os.chdir(previous)


class HostBase:
    kind = "component"

    def __init__(
        self,
        graph: TopologyGraph,
        component: str,
        task_index: int,
        *,
        conf_overrides: Mapping[str, Any] | None = None,
        tuple_ids: IdGenerator | None = None,
        check_wire: bool = True,
        component_class: type | None = None,
        fast: bool = True,
        colocated: frozenset[str] = frozenset(),
    ):
        comp = graph.component(component)
        self.graph = graph
        self.component = comp
        self.name = comp.name
        self.task_index = task_index
        self.task_id = comp.task_id(task_index)
        self.outbox = Outbox()
        self.router = Router(graph, comp.name, task_index, colocated)
        self.conf = storm_conf(graph, comp, conf_overrides)
        self.context = storm_context(graph, comp.name, task_index)
        self.tuple_ids: IdGenerator = tuple_ids or counter_ids(prefix=f"{comp.name}:{task_index}:")
        self.completion = Completion()
        self.emitter = Emitter(self.router, self.outbox, comp.name, check_wire)
        cls = component_class or import_class(comp.class_path, graph.source_dirs, comp.name)
        # What the class can do comes from the graph; a class given in place of the
        # graph's (``stormshift.testing``) is read as loading would read it.
        self.capabilities = comp.capabilities if component_class is None else \
            capabilities_of(component_class, comp.config, spout=comp.is_spout)
        tickless = self.capabilities.batching is Batching.TICKLESS
        with working_dir(graph):
            self.instance = construct(cls, comp.name, tickless=tickless)
        # Which library methods the class inherits unchanged, so fast closures may replace
        # them (read at load: ``topology/capabilities.py``); none with ``fast=False``. An
        # ``emit_path`` of None: the user (or an unknown library class) defines ``emit``.
        caps = self.capabilities
        self.emit_path: EmitPath | None = caps.emit_path if fast else None
        self.fast_ack: bool = caps.fast_ack if fast else False
        self.fast_fail: bool = caps.fast_fail if fast else False
        self.opened = False

    def _capture(self, source_tuple_types: Any = None) -> None:
        inst = self.instance
        setup_instance(
            inst, self.name, self.conf, self.context, self.outbox.logs, source_tuple_types
        )
        inst.send_message = capture_send_message(inst, self.emitter, self.completion)

    @property
    def fast_path(self) -> bool:
        """True when emit (and for bolts ack/fail) bypass pystorm's message dicts."""
        return self.emit_path is not None and (
            self.kind == "spout" or (self.fast_ack and self.fast_fail)
        )

    def open(self) -> None:
        """Call the user's ``initialize(conf, context)`` in the working dir."""
        try:
            with working_dir(self.graph):
                self.instance.initialize(self.conf, self.context)
        except Exception as exc:
            raise self._failure(exc, "initialize", None, report=False) from exc
        self.opened = True

    def _failure(
        self, exc: BaseException, call: str, tup: Any, report: bool = True
    ) -> ComponentFailure:
        """Report ``exc`` as pystorm would (error + auto-fail), then wrap it."""
        inst = self.instance
        if report:
            try:
                inst._handle_run_exception(exc)
            except Exception as inner:  # noqa: BLE001 - the user's override of it failed too
                self.outbox.errors.append(
                    f"{type(inner).__name__} while reporting {exc!r}: {inner}"
                )
        else:
            self.outbox.errors.append("".join(traceback.format_exception(exc)))
        inst._current_tups = EMPTY
        location = user_location(exc.__traceback__, self.graph.project_dir or self.graph.working_dir)
        return ComponentFailure(
            component=self.name,
            task=self.task_index,
            call=call,
            cause=exc,
            where=module_location(exc.__traceback__),
            traceback_text="".join(traceback.format_exception(exc)),
            tup=tup,
            location=location,
        )
