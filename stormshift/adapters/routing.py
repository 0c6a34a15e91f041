"""Which task of each consumer gets an emitted tuple (Storm's groupings).

Routing is a pure function of (grouping, consumer parallelism, values,
emitter task index, per-stream emit counter), so every engine, process and
run sends a tuple to the same task:

- ``fields``: ``stable_hash(grouping values) % par``. The hash is CRC-32
  (``zlib.crc32``) over a canonical, type-tagged encoding of the values
  (see ``stable_hash``), never Python's salted ``hash()``. It is *not*
  Java's ``hashCode``: which key lands on which task differs from a real
  Storm cluster, but equal keys always meet on one task, which is what the
  fields grouping promises.
- ``shuffle``, ``none``, ``local_or_shuffle``: deterministic round robin
  ``(emitter_task_index + seq) % par`` where ``seq`` counts the emitter's
  emits on that stream (``Router.reset_seq`` restarts it, e.g. per batch).
- ``all``: every task. ``global``: the lowest task (index 0).
- ``direct``: the task the emitter names (``emit(..., direct_task=id)``).
- a *colocated* consumer (``Router(..., colocated=...)``): the task with the
  emitter's own index. Storm's ``local_or_shuffle`` prefers a task in the
  emitter's worker; an engine that runs a consumer's task *i* in the same place
  as the emitter's task *i* (the Spark engine's heads on their spout's
  partitions, ``engines/spark/protocol/layout.py``) names it so, and that choice is made
  here, once, not remapped later.

``Router`` compiles one closure per output stream at construction (field
positions, consumer list, constant targets when every consumer has
``par == 1``) so the per-emit cost is a dict lookup and a call.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable, Sequence
from operator import itemgetter
from typing import Any

from stormshift import native
from stormshift.adapters.direct_routes import compile_direct
from stormshift.adapters.hashing import STR_SEED, hash_one, stable_hash
from stormshift.errors import TupleError
from stormshift.topology.graph import (
    ComponentDef,
    Grouping,
    GroupingKind,
    StreamDef,
    Subscription,
    TopologyGraph,
)

__all__ = ["Router", "Targets", "choose_tasks", "hash_one", "stable_hash"]

Targets = tuple[tuple[str, int], ...]
RouteFn = Callable[[Sequence[Any], "int | None"], Targets]

_ROUND_ROBIN = (GroupingKind.SHUFFLE, GroupingKind.NONE, GroupingKind.LOCAL_OR_SHUFFLE)
_CONSTANT = (GroupingKind.GLOBAL, GroupingKind.ALL)
_MEMO_MAX = 1 << 16  # distinct str keys remembered per stream (routing of hot keys)
_CEMIT = native.load("stormshift.adapters.cemit")  # route_keyed in C, or None


# -- the pure choice ---------------------------------------------------
def choose_tasks(
    grouping: Grouping,
    par: int,
    values: Sequence[Any],
    *,
    field_positions: Sequence[int],
    emitter_task_index: int,
    seq: int,
    direct_index: int | None = None,
) -> tuple[int, ...]:
    """Task indices (0..par-1) of one consumer that receive ``values``."""
    kind = grouping.kind
    if kind is GroupingKind.FIELDS:
        if len(field_positions) == 1:
            return (hash_one(values[field_positions[0]]) % par,)
        return (stable_hash([values[p] for p in field_positions]) % par,)
    if kind in _ROUND_ROBIN:
        return ((emitter_task_index + seq) % par,)
    if kind is GroupingKind.GLOBAL:
        return (0,)
    if kind is GroupingKind.ALL:
        return tuple(range(par))
    if kind is GroupingKind.DIRECT:
        if direct_index is None:
            raise ValueError("direct grouping needs the task named by the emitter")
        return (direct_index,)
    raise ValueError(f"unknown grouping {grouping}")


# -- per-stream compiled routes ----------------------------------------
class Router:
    """Routes one emitting task's tuples to (consumer, task index) targets.

    ``route(stream, values, direct_task_id)`` checks the stream is declared
    and the arity matches, then returns a target for every subscribed
    consumer (in the graph's topological order). ``seq`` counts emits per
    stream for the round-robin groupings. ``constant`` holds the targets of
    each stream whose targets never change (every consumer has ``par == 1``,
    a ``global`` or ``all`` grouping, or is colocated).
    """

    def __init__(self, graph: TopologyGraph, component: str, task_index: int,
                 colocated: frozenset[str] = frozenset()):
        self.graph = graph
        self.component = graph.component(component)
        self.task_index = task_index
        self.colocated = colocated
        self.constant: dict[str, Targets] = {}
        self._seq: dict[str, list[int]] = {}
        self._first_task: dict[str, int] = {
            c.name: c.first_task_id for c in graph.components.values()
        }
        self.routes: dict[str, RouteFn] = {
            name: self._compile(stream) for name, stream in self.component.outputs.items()
        }

    # public API ---------------------------------------------------------
    def route(
        self, stream: str, values: Sequence[Any], direct_task_id: int | None = None
    ) -> Targets:
        fn = self.routes.get(stream)
        if fn is None:
            raise self.undeclared(stream, values)
        return fn(values, direct_task_id)

    def task_ids(self, targets: Targets) -> list[int]:
        """Storm's global task ids of ``targets`` (what ``need_task_ids`` returns)."""
        first = self._first_task
        return [first[name] + index for name, index in targets]

    def reset_seq(self) -> None:
        for cell in self._seq.values():
            cell[0] = 0

    def seq(self, stream: str) -> int:
        return self._seq[stream][0] if stream in self._seq else 0

    def undeclared(self, stream: str, values: Any = None) -> TupleError:
        declared = sorted(self.component.outputs)
        return TupleError(
            f"emit to undeclared stream {stream!r}; declared streams are {declared}. "
            "fix: add the stream to the component's `outputs` "
            "(e.g. Stream(fields=[...], name='...'))",
            component=self.component.name,
            stream=stream,
            values=values,
        )

    # compilation ----------------------------------------------------------
    def _compile(self, stream: StreamDef) -> RouteFn:
        comp = self.component
        subs = self.graph.subscriptions(comp.name, stream.name)
        arity = len(stream.fields)
        check = _arity_checker(comp.name, stream, arity)
        if stream.direct or any(s.grouping.kind is GroupingKind.DIRECT for s in subs):
            return compile_direct(self.component, stream, subs, check)

        def no_direct(direct_task_id: int | None) -> None:
            if direct_task_id is not None:
                raise TupleError(
                    f"emit with direct_task={direct_task_id} to stream {stream.name!r}, "
                    "which is not declared direct. fix: declare it with "
                    "Stream(fields=[...], name=..., direct=True) and subscribe with "
                    "Grouping.DIRECT, or drop direct_task",
                    component=comp.name,
                    stream=stream.name,
                )

        for s in subs:
            if s.grouping.kind is GroupingKind.FIELDS:
                _field_positions(comp, stream, s)  # validate even when par == 1
        if all(s.par == 1 or s.grouping.kind in _CONSTANT or s.consumer in self.colocated
               for s in subs):
            constant: Targets = tuple(t for s in subs for t in self._picker(stream, s)((), 0))
            self.constant[stream.name] = constant

            def route_constant(values: Sequence[Any], direct_task_id: int | None = None) -> Targets:
                if len(values) != arity:
                    check(values)
                if direct_task_id is not None:
                    no_direct(direct_task_id)
                return constant

            return route_constant

        pickers = [self._picker(stream, s) for s in subs]
        seq = self._seq.setdefault(stream.name, [0])
        if (
            len(subs) == 1
            and subs[0].grouping.kind is GroupingKind.FIELDS
            and len(subs[0].grouping.fields) == 1
        ):
            return self._compile_fields_one(stream, subs[0], check, no_direct)
        keyed = self._compile_keyed(stream, subs, pickers, seq, check, no_direct)
        if keyed is not None:
            return keyed
        if len(pickers) == 1:
            only = pickers[0]

            def route_one(values: Sequence[Any], direct_task_id: int | None = None) -> Targets:
                if len(values) != arity:
                    check(values)
                if direct_task_id is not None:
                    no_direct(direct_task_id)
                s = seq[0]
                seq[0] = s + 1
                return only(values, s)

            return route_one

        def route_many(values: Sequence[Any], direct_task_id: int | None = None) -> Targets:
            if len(values) != arity:
                check(values)
            if direct_task_id is not None:
                no_direct(direct_task_id)
            s = seq[0]
            seq[0] = s + 1
            out: Targets = ()
            for pick in pickers:
                out += pick(values, s)
            return out

        return route_many

    def _compile_fields_one(
        self,
        stream: StreamDef,
        sub: Subscription,
        check: Callable[[Sequence[Any]], None],
        no_direct: Callable[[int | None], None],
    ) -> RouteFn:
        """The common case fused into one closure: one consumer, fields on one field."""
        arity = len(stream.fields)
        (pos,) = _field_positions(self.component, stream, sub)
        par = sub.par
        slots = tuple(((sub.consumer, i),) for i in range(par))
        crc32 = zlib.crc32
        comp_name = self.component.name
        memo: dict[str, Targets] = {}  # str keys only: 1, 1.0 and True are equal dict keys

        def route_fields_one(values: Sequence[Any], direct_task_id: int | None = None) -> Targets:
            if len(values) != arity:
                check(values)
            if direct_task_id is not None:
                no_direct(direct_task_id)
            v = values[pos]
            if type(v) is str:
                slot = memo.get(v)
                if slot is None:
                    slot = slots[crc32(v.encode("utf-8", "surrogatepass"), STR_SEED) % par]
                    if len(memo) < _MEMO_MAX:
                        memo[v] = slot
                return slot
            try:
                return slots[hash_one(v) % par]
            except TypeError as exc:
                raise _unhashable(comp_name, stream, sub, exc, values) from None

        return route_fields_one

    def _compile_keyed(
        self,
        stream: StreamDef,
        subs: tuple[Subscription, ...],
        pickers: list[Callable[[Sequence[Any], int], Targets]],
        seq: list[int],
        check: Callable[[Sequence[Any]], None],
        no_direct: Callable[[int | None], None],
    ) -> RouteFn | None:
        """Several consumers, none round robin (fields, global, all, par 1): the targets are a
        function of the grouping fields' values alone, so they are memoized per combination
        (str values only, as in ``route_fields_one``): a known key costs one dict lookup
        instead of a picker call per consumer. None when a consumer takes turns."""
        if len(subs) < 2 or any(s.grouping.kind in _ROUND_ROBIN and s.par > 1 for s in subs):
            return None
        positions = sorted({p for s in subs if s.grouping.kind is GroupingKind.FIELDS and s.par > 1
                            for p in _field_positions(self.component, stream, s)})
        if not positions:
            return None
        arity = len(stream.fields)
        if _CEMIT is not None:  # the same route in C (adapters/cemit.pyx)
            return _CEMIT.KeyedRoute(arity, check, no_direct, seq,  # type: ignore[no-any-return]
                                     tuple(positions), pickers, _MEMO_MAX)
        key_of = itemgetter(*positions)
        memo: dict[Any, Targets] = {}
        same: dict[Targets, Targets] = {}  # one object per distinct targets (a deliver's plan
        single = len(positions) == 1       # is found by identity first: the engine's Deliver)

        # The checks and the picker loop of route_many, inlined on purpose: a shared helper
        # costs one more call per emit (see _picker).
        def route_keyed(values: Sequence[Any], direct_task_id: int | None = None) -> Targets:
            if len(values) != arity:
                check(values)
            if direct_task_id is not None:
                no_direct(direct_task_id)
            s = seq[0]
            seq[0] = s + 1
            key = key_of(values)
            try:
                out = memo.get(key)
            except TypeError:  # an unhashable value: the picker below says what is wrong
                out = None
            if out is None:
                out = ()
                for pick in pickers:
                    out += pick(values, s)
                if len(memo) < _MEMO_MAX and (type(key) is str if single
                                              else all(type(k) is str for k in key)):
                    memo[key] = out = same.setdefault(out, out)
            return out

        return route_keyed

    def _picker(
        self, stream: StreamDef, sub: Subscription
    ) -> Callable[[Sequence[Any], int], Targets]:
        """One consumer's choice as a closure over precomputed constants."""
        name, par, kind = sub.consumer, sub.par, sub.grouping.kind
        if name in self.colocated:
            if kind not in _ROUND_ROBIN or par != self.component.par:
                raise ValueError(
                    f"{name!r} cannot be colocated with {self.component.name!r}: it needs a "
                    f"shuffle, none or local_or_shuffle grouping and par {self.component.par} "
                    f"(has {sub.grouping}, par {par})")
            own = ((name, self.task_index),)
            return lambda values, s: own
        if par == 1 or kind is GroupingKind.GLOBAL:
            fixed = ((name, 0),)
            return lambda values, s: fixed
        if kind is GroupingKind.ALL:
            every = tuple((name, i) for i in range(par))
            return lambda values, s: every
        if kind in _ROUND_ROBIN:
            slots = tuple(((name, i),) for i in range(par))
            base = self.task_index
            return lambda values, s: slots[(base + s) % par]
        if kind is GroupingKind.FIELDS:
            positions = _field_positions(self.component, stream, sub)
            slots = tuple(((name, i),) for i in range(par))
            comp_name = self.component.name
            if len(positions) == 1:
                pos = positions[0]
                # The slot logic of route_fields_one, inlined in both on purpose: a shared
                # helper costs one more call per emit (~100 ns measured, of a 1 µs budget).
                memo: dict[str, Targets] = {}  # str keys only, as in route_fields_one

                def pick_field(values: Sequence[Any], s: int) -> Targets:
                    v = values[pos]
                    if type(v) is str:
                        slot = memo.get(v)
                        if slot is None:
                            slot = slots[hash_one(v) % par]
                            if len(memo) < _MEMO_MAX:
                                memo[v] = slot
                        return slot
                    try:
                        return slots[hash_one(v) % par]
                    except TypeError as exc:
                        raise _unhashable(comp_name, stream, sub, exc, values) from None

                return pick_field

            def pick_fields(values: Sequence[Any], s: int) -> Targets:
                try:
                    return slots[stable_hash([values[p] for p in positions]) % par]
                except TypeError as exc:
                    raise _unhashable(comp_name, stream, sub, exc, values) from None

            return pick_fields
        raise ValueError(f"unknown grouping {sub.grouping}")


def _field_positions(comp: ComponentDef, stream: StreamDef, sub: Subscription) -> tuple[int, ...]:
    try:
        return tuple(stream.fields.index(f) for f in sub.grouping.fields)
    except ValueError:
        raise TupleError(
            f"{sub.consumer!r} groups stream {stream.name!r} by fields "
            f"{list(sub.grouping.fields)}, but the stream declares {list(stream.fields)}. "
            "fix: group by declared fields",
            component=comp.name,
            stream=stream.name,
        ) from None


def _arity_checker(
    component: str, stream: StreamDef, arity: int
) -> Callable[[Sequence[Any]], None]:
    def check(values: Sequence[Any]) -> None:
        if len(values) != arity:
            raise TupleError(
                f"emitted {len(values)} values {list(values)!r} but stream {stream.name!r} "
                f"declares {arity} fields {list(stream.fields)}. fix: emit one value per "
                "declared field, or change the component's `outputs`",
                component=component,
                stream=stream.name,
                values=values,
            )

    return check


def _unhashable(
    component: str, stream: StreamDef, sub: Subscription, exc: Exception, values: Any
) -> TupleError:
    return TupleError(
        f"cannot route to {sub.consumer!r} by {sub.grouping}: {exc}",
        component=component,
        stream=stream.name,
        values=values,
    )
