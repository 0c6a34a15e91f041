"""Failure injection for the local engine: what Storm does when things break.

- ``FailTuples``: a bolt fails chosen input tuples (by 1-based index of the
  data tuples the component receives, in delivery order, and/or by a
  predicate on the ``Tuple``). With ``before=False`` (default) the bolt
  processes the tuple first -- its state changes and its emits flow on --
  and the tuple is then failed instead of acked: the typical "wrote to the
  store, then timed out" failure. The spout's ``fail`` follows and a reliable
  spout replays, so downstream bolts count the same input twice. With
  ``before=True`` the bolt never sees the tuple. ``times`` caps how often the
  rule fires (a predicate matches replays too).
- ``CrashTask``: the task's process is killed (``kill -9``) when it is about to
  execute its ``at_tuple``-th data tuple (1-based, counted over the run). No
  fail is sent: the tuple, everything queued to the task and everything the
  instance held unacked are lost, their trees time out after
  ``topology.message.timeout.secs`` and a reliable spout replays them. The
  instance is re-created with a fresh ``initialize``: in-memory state is lost.

``FaultPlan`` is the frozen description; ``plan.start()`` gives the mutable
``ActiveFaults`` one run consults, so a plan can be reused across runs.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from stormshift.errors import FaultSpecError

__all__ = ["Action", "ActiveFaults", "CrashTask", "FailTuples", "FaultPlan"]


class Action(enum.Enum):
    """What the engine does with one delivered tuple."""

    NONE = "none"
    FAIL_BEFORE = "fail_before"
    FAIL_AFTER = "fail_after"
    CRASH = "crash"


@dataclass(frozen=True)
class FailTuples:
    component: str
    indexes: frozenset[int] = frozenset()
    predicate: Callable[[Any], bool] | None = None
    before: bool = False
    times: int | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "indexes", frozenset(self.indexes))
        if not self.indexes and self.predicate is None:
            raise FaultSpecError(
                f"FailTuples({self.component!r}) selects nothing: give indexes= and/or predicate="
            )
        if any(i < 1 for i in self.indexes):
            raise FaultSpecError(
                f"FailTuples({self.component!r}): indexes are 1-based, got {sorted(self.indexes)}"
            )


@dataclass(frozen=True)
class CrashTask:
    component: str
    task_index: int = 0
    at_tuple: int = 1

    def __post_init__(self) -> None:
        if self.at_tuple < 1:
            raise FaultSpecError(
                f"CrashTask({self.component!r}): at_tuple is 1-based, got {self.at_tuple}"
            )


Fault = FailTuples | CrashTask


@dataclass(frozen=True)
class FaultPlan:
    faults: tuple[Fault, ...] = field(default_factory=tuple)

    @classmethod
    def of(cls, faults: FaultPlan | Iterable[Fault] | None) -> FaultPlan:
        if faults is None:
            return cls()
        if isinstance(faults, FaultPlan):
            return faults
        return cls(tuple(faults))

    def check(self, components: dict[str, Any]) -> None:
        """Refuse faults naming unknown components, spouts or task indexes."""
        for fault in self.faults:
            comp = components.get(fault.component)
            if comp is None:
                raise FaultSpecError(
                    f"{fault}: no component {fault.component!r}; components are {sorted(components)}"
                )
            if comp.is_spout:
                raise FaultSpecError(f"{fault}: faults target bolts; {fault.component!r} is a spout")
            if isinstance(fault, CrashTask) and not 0 <= fault.task_index < comp.par:
                raise FaultSpecError(f"{fault}: task index must be in 0..{comp.par - 1}")

    def start(self) -> ActiveFaults:
        return ActiveFaults(self)


class ActiveFaults:
    """Counters of one run: deliveries per component and per task, rule firings."""

    def __init__(self, plan: FaultPlan) -> None:
        self._by_component: dict[str, list[tuple[int, Fault]]] = {}
        for number, fault in enumerate(plan.faults):
            self._by_component.setdefault(fault.component, []).append((number, fault))
        self._seen_component: dict[str, int] = {}
        self._seen_task: dict[tuple[str, int], int] = {}
        self._fired: dict[int, int] = {}
        self.injected: list[str] = []

    def on_deliver(self, component: str, task_index: int, tup: Any) -> Action:
        """Count one data tuple reaching a task and decide its fate."""
        rules = self._by_component.get(component)
        if rules is None:
            return Action.NONE
        nth = self._seen_component[component] = self._seen_component.get(component, 0) + 1
        key = (component, task_index)
        nth_task = self._seen_task[key] = self._seen_task.get(key, 0) + 1
        for number, fault in rules:
            if isinstance(fault, CrashTask):
                if fault.task_index == task_index and fault.at_tuple == nth_task:
                    return self._fire(
                        number,
                        f"crash {component}[{task_index}] at its tuple {nth_task}",
                        Action.CRASH,
                    )
            elif self._selects(number, fault, nth, tup):
                action = Action.FAIL_BEFORE if fault.before else Action.FAIL_AFTER
                return self._fire(number, f"fail {component} tuple {nth} ({action.value})", action)
        return Action.NONE

    def _selects(self, number: int, fault: FailTuples, nth: int, tup: Any) -> bool:
        if fault.times is not None and self._fired.get(number, 0) >= fault.times:
            return False
        if nth in fault.indexes:
            return True
        return fault.predicate is not None and bool(fault.predicate(tup))

    def _fire(self, number: int, what: str, action: Action) -> Action:
        self._fired[number] = self._fired.get(number, 0) + 1
        self.injected.append(what)
        return action
