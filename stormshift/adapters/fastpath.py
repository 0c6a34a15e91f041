"""Capturing what a component sends: the fast path and the always-correct path.

pystorm's ``emit``/``ack``/``fail`` build a message dict per call and hand it
to ``send_message``. Every hosted instance gets an instance-level
``send_message`` that decodes those dicts into the outbox (the *slow path*:
correct whatever the user's class overrides, about 3-4 µs per emit).

When the user's class does not override ``emit``/``ack``/``fail`` (the one
found first in its MRO comes from pystorm/streamparse), the host also binds
instance-level closures that reproduce the library method's semantics and
append straight to the outbox (the *fast path*):

- ``Bolt.emit``: anchors default to ``_current_tups`` when ``auto_anchor``;
  ``need_task_ids`` returns the global task ids.
- ``BatchingBolt.emit``: keyword-only, ``need_task_ids`` forced False.
- ``Spout.emit``: ``tup_id`` becomes the Emit's ``msg_id``.
- ``ReliableSpout.emit``: requires ``tup_id`` and records ``unacked_tuples``.
- ``Bolt.ack``/``Bolt.fail``: accept a Tuple or an id.

Both paths share ``Completion`` so that per host call the first ack or fail
of a tuple wins (a tuple the user failed is not then auto-acked, as Storm's
acker would ignore the late ack).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from stormshift import native
from stormshift.adapters.logging_capture import STORM_LEVEL_NAMES
from stormshift.adapters.outbox import Emit, Outbox
from stormshift.adapters.routing import Router
from stormshift.adapters.tuples import Tuple, to_wire
from stormshift.errors import TupleError

_INT64 = 2**63  # JSON ints Storm (Java long) can carry: -2**63 <= v < 2**63
_CEMIT = native.load("stormshift.adapters.cemit")  # a delivered bolt emit in C, or None


class Completion:
    """Tuple ids acked or failed during the current host call (first wins)."""

    __slots__ = ("done",)

    def __init__(self) -> None:
        self.done: set[Any] = set()


class Emitter:
    """Shared emit machinery of one host: wire check, routing, outbox append."""

    def __init__(self, router: Router, outbox: Outbox, component: str, check_wire: bool):
        self.router = router
        self.outbox = outbox
        self.component = component
        self.check_wire = check_wire
        self.fields = {name: s.fields for name, s in router.component.outputs.items()}

    def values(self, tup: Any, stream: str) -> list[Any]:
        if self.check_wire:
            return to_wire(tup, self.component, stream, self.fields.get(stream, ()))
        if isinstance(tup, (list, tuple)):
            return list(tup)
        return to_wire(tup, self.component, stream)  # raises the TupleError

    def emit(
        self,
        tup: Any,
        stream: str | None,
        anchors: tuple[str, ...],
        msg_id: Any,
        direct_task: int | None,
    ) -> tuple[tuple[str, int], ...]:
        stream = "default" if stream is None else stream
        try:
            route = self.router.routes.get(stream)
            if route is None:
                raise self.router.undeclared(stream, tup)
            values = self.values(tup, stream)
            targets = route(values, direct_task)
        except TupleError as exc:
            exc.msg_id = msg_id  # a spout's: the engine dead-letters it and fail()s the id
            raise
        self.outbox.emits.append(Emit(stream, values, targets, anchors, msg_id))
        return targets


# -- slow path: decode send_message dicts ------------------------------
def capture_send_message(
    instance: Any, emitter: Emitter, completion: Completion
) -> Callable[[Any], None]:
    outbox = emitter.outbox
    router = emitter.router
    done = completion.done

    def send_message(message: Any) -> None:
        if not isinstance(message, dict):  # as pystorm: log and drop
            instance.logger.error(
                "%s attempted to send a non dict message to Storm: %r", emitter.component, message
            )
            return
        command = message.get("command")
        if command == "emit":
            direct = message.get("task")
            targets = emitter.emit(
                message["tuple"],
                message.get("stream"),
                tuple(message.get("anchors") or ()),
                message.get("id"),
                direct,
            )
            if message.get("need_task_ids", True) and direct is None:
                instance._pending_task_ids.append(router.task_ids(targets))
        elif command == "ack" or command == "fail":
            tid = message["id"]
            if tid not in done:
                done.add(tid)
                (outbox.acks if command == "ack" else outbox.fails).append(tid)
        elif command == "log":
            outbox.logs.append(
                (STORM_LEVEL_NAMES.get(message.get("level", 2), "INFO"), str(message["msg"]))
            )
        elif command == "error":
            outbox.errors.append(str(message["msg"]))
        elif command == "metrics":
            outbox.metrics.append((message["name"], message["params"]))
        elif command == "sync":
            outbox.syncs += 1
        else:
            outbox.logs.append(("WARN", f"unknown multilang message dropped: {message!r}"))

    return send_message


# -- fast path ---------------------------------------------------------
class AnchorCache:
    """``_current_tups`` and its ids, so an emit need not rebuild the ids."""

    __slots__ = ("ids", "tups")

    def __init__(self) -> None:
        self.tups: list[Any] | None = None
        self.ids: tuple[Any, ...] = ()


def _ids(items: Sequence[Any]) -> tuple[Any, ...]:
    return tuple([a.id if isinstance(a, Tuple) else a for a in items])


Deliver = Callable[[str, list[Any], Any], None]


def bolt_emit(
    instance: Any, emitter: Emitter, cache: AnchorCache, batching: bool,
    deliver: Deliver | None = None,
) -> Callable[..., Any]:
    """Fast ``emit`` with pystorm ``Bolt.emit`` (or ``BatchingBolt.emit``) semantics.

    With ``deliver``, a routed emit is handed to ``deliver(stream, values,
    targets)`` at once instead of becoming an ``Emit`` in the outbox (the
    Spark stage writes it straight into its rows); anchors are then not
    computed: they only matter to Storm's acker, and a batch never replays.
    """
    routes = emitter.router.routes
    undeclared = emitter.router.undeclared
    task_ids = emitter.router.task_ids
    append = emitter.outbox.emits.append
    component = emitter.component
    fields = emitter.fields
    check_wire = emitter.check_wire
    values_of = emitter.values
    emit: Callable[..., Any]
    if deliver is not None and _CEMIT is not None:  # this emit in C (adapters/cemit.pyx)
        emit = _CEMIT.BoltEmit(routes, undeclared, task_ids, component, fields, values_of,
                               to_wire, check_wire, deliver).emit
        return emit if not batching else _batching(emit)

    def emit(  # type: ignore[no-redef]
        tup: Any,
        stream: str | None = None,
        anchors: Sequence[Any] | None = None,
        direct_task: int | None = None,
        need_task_ids: bool = False,
    ) -> list[int] | None:
        if stream is None:
            stream = "default"
        route = routes.get(stream)
        if route is None:
            raise undeclared(stream, tup)
        t = type(tup)
        if (t is list or t is tuple) and check_wire:
            # wire_values() inlined: bolt emits are the per-tuple hot path. A delivered
            # emit is routed and packed before this returns, so it needs no copy (deliver
            # copies what it keeps); the outbox keeps the Emit, so that one takes a copy.
            values = tup if deliver is not None else list(tup)
            for v in values:  # the cheap wire check; anything unusual takes to_wire
                tv = type(v)
                if tv is str or v is None or tv is bool:
                    continue
                if tv is int:
                    # literals, not -_INT64 <= v < _INT64: compiled, no negation per value
                    if -9223372036854775808 <= v <= 9223372036854775807:
                        continue
                elif tv is float and v - v == 0.0:
                    continue
                values = to_wire(tup, component, stream, fields[stream])
                break
        else:
            values = values_of(tup, stream)
        targets = route(values, direct_task)
        if deliver is not None:
            deliver(stream, values, targets)
        else:
            if anchors is None:
                if instance.auto_anchor:
                    cur = instance._current_tups
                    if cur is cache.tups:
                        ids = cache.ids
                    else:
                        ids = _ids(cur)
                        cache.tups, cache.ids = cur, ids
                else:
                    ids = ()
            else:
                ids = _ids(anchors)
            append(Emit(stream, values, targets, ids, None))
        if need_task_ids:
            return task_ids(targets)
        return None

    return emit if not batching else _batching(emit)


def _batching(emit: Callable[..., Any]) -> Callable[..., None]:
    """``BatchingBolt.emit``'s signature (keywords only, no task ids) over ``emit``."""

    def batching_emit(
        tup: Any,
        *,
        stream: str | None = None,
        anchors: Sequence[Any] | None = None,
        direct_task: int | None = None,
        need_task_ids: bool = False,
    ) -> None:
        emit(tup, stream, anchors, direct_task, False)

    return batching_emit


def wire_values(tup: Any, component: str, stream: str, fields: Any) -> list[Any]:
    """``tup`` as a list of wire values: plain JSON scalars pass, anything else takes to_wire."""
    values = list(tup)
    for v in values:
        tv = type(v)
        if tv is str or v is None or tv is bool:
            continue
        if tv is int:
            if -9223372036854775808 <= v <= 9223372036854775807:
                continue
        elif tv is float and v - v == 0.0:
            continue
        return to_wire(tup, component, stream, fields)
    return values


def spout_emit(instance: Any, emitter: Emitter, reliable: bool) -> Callable[..., Any]:
    """Fast ``emit`` with pystorm ``Spout.emit`` (or ``ReliableSpout.emit``) semantics."""
    routes = emitter.router.routes
    undeclared = emitter.router.undeclared
    task_ids = emitter.router.task_ids
    append = emitter.outbox.emits.append
    values_of = emitter.values
    component = emitter.component
    fields = emitter.fields
    check_wire = emitter.check_wire

    def emit(
        tup: Any,
        tup_id: Any = None,
        stream: str | None = None,
        direct_task: int | None = None,
        need_task_ids: bool = False,
    ) -> list[int] | None:
        if stream is None:
            stream = "default"
        try:  # free in 3.11 unless raised
            route = routes.get(stream)
            if route is None:
                raise undeclared(stream, tup)
            t = type(tup)
            if (t is list or t is tuple) and check_wire:
                values = wire_values(tup, component, stream, fields[stream])
            else:
                values = values_of(tup, stream)
            targets = route(values, direct_task)
        except TupleError as exc:
            exc.msg_id = tup_id  # so the engine can dead-letter it and fail() that id
            raise
        append(Emit(stream, values, targets, (), tup_id))
        if need_task_ids:
            return task_ids(targets)
        return None

    if not reliable:
        return emit

    def reliable_emit(
        tup: Any,
        tup_id: Any = None,
        stream: str | None = None,
        direct_task: int | None = None,
        need_task_ids: bool = False,
    ) -> list[int] | None:
        if tup_id is None:
            raise ValueError(
                "You must provide a tuple ID when emitting with a ReliableSpout in order "
                "for the tuple to be tracked."
            )
        instance.unacked_tuples[tup_id] = (tup, stream, direct_task, need_task_ids)
        return emit(tup, tup_id, stream, direct_task, need_task_ids)

    return reliable_emit


def bolt_ack_fail(
    outbox: Outbox, completion: Completion
) -> tuple[Callable[[Any], None], Callable[[Any], None]]:
    """Fast ``ack``/``fail`` with pystorm ``Bolt`` semantics (Tuple or id)."""
    done = completion.done
    add = done.add
    acks_append = outbox.acks.append
    fails_append = outbox.fails.append

    def ack(tup: Any) -> None:
        tid = tup.id if isinstance(tup, Tuple) else tup
        if tid not in done:
            add(tid)
            acks_append(tid)

    def fail(tup: Any) -> None:
        tid = tup.id if isinstance(tup, Tuple) else tup
        if tid not in done:
            add(tid)
            fails_append(tid)

    return ack, fail

