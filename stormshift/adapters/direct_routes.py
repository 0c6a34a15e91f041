"""Routes of direct streams (Storm's direct grouping): the emitter names the consumer task.

Split from ``routing.py``: the checks here are all about what the emitter got wrong.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from stormshift.adapters.outbox import Targets
from stormshift.errors import TupleError
from stormshift.topology.graph import ComponentDef, GroupingKind, StreamDef, Subscription

__all__ = ["compile_direct"]


def compile_direct(
    comp: ComponentDef,
    stream: StreamDef,
    subs: tuple[Subscription, ...],
    check: Callable[[Sequence[Any]], None],
) -> Callable[[Sequence[Any], int | None], Targets]:
    """The route of a direct stream: the emitter names the task (``emit(..., direct_task=id)``);
    every misuse is a TupleError that says what to fix."""
    arity = len(stream.fields)
    owners: dict[int, tuple[Subscription, int]] = {}
    for s in subs:
        for i in range(s.par):
            owners[s.first_task_id + i] = (s, i)

    def route_direct(values: Sequence[Any], direct_task_id: int | None = None) -> Targets:
        if len(values) != arity:
            check(values)
        if direct_task_id is None:
            raise TupleError(
                f"regular emit to direct stream {stream.name!r}. fix: pass "
                "direct_task=<task id of a consumer task> to emit()",
                component=comp.name,
                stream=stream.name,
                values=values,
            )
        if not subs:
            return ()
        owner = owners.get(direct_task_id)
        if owner is None:
            tasks = {
                s.consumer: list(range(s.first_task_id, s.first_task_id + s.par)) for s in subs
            }
            raise TupleError(
                f"direct_task={direct_task_id} is not a task of any consumer of stream "
                f"{stream.name!r}; consumer task ids are {tasks}. fix: emit to one of "
                "those ids (e.g. from context['task->component'])",
                component=comp.name,
                stream=stream.name,
                values=values,
            )
        sub, index = owner
        if sub.grouping.kind is not GroupingKind.DIRECT:
            raise TupleError(
                f"direct_task={direct_task_id} belongs to {sub.consumer!r}, which "
                f"subscribes to {stream.name!r} with {sub.grouping}, not direct. fix: "
                "subscribe it with Grouping.DIRECT",
                component=comp.name,
                stream=stream.name,
                values=values,
            )
        return ((sub.consumer, index),)

    return route_direct
