"""Keyed state maps a bolt uses from ``process()`` without knowing the batch.

    def initialize(self, conf, ctx):
        self.counts = stormshift.state.opaque_map("ctr")
    def process(self, tup):
        self.counts.increment(tup.values.ad_id, 1)

Kinds (Trident semantics, per key):

* ``transactional_map`` stores ``(value, txid)``; a batch whose txid is
  already stored for a key is a replay and is skipped for that key. Correct
  only if a replayed batch holds the same tuples (the Spark engine's do).
* ``opaque_map`` stores ``(prev, curr, txid)``; a replay recomputes from
  ``prev``, so it stays correct even if the replayed batch differs.
* ``plain_map`` stores the value only (at-least-once; for caches, lookups).

A handle finds the running ``TaskScope`` (which supplies txid and epoch)
and buffers writes there; reads see the batch's own writes, and an opaque
replay reads ``prev``. Keys must reach one task only (fields grouping on
the key): two tasks writing one key under one txid would skip each other.
"""

from __future__ import annotations

import contextvars
from collections.abc import Callable, Iterable
from typing import Any

from stormshift.errors import StateError
from stormshift.state import keys as K
from stormshift.state.codec import decode_value, visible

KINDS = ("transactional", "opaque", "plain")
_MISSING = object()
# The running TaskScope (set by scope.TaskScope; lives here so the hot path needs no import).
_current: contextvars.ContextVar[Any] = contextvars.ContextVar("stormshift_task_scope", default=None)
__all__ = ["KINDS", "MapBuffer", "MapHandle", "enter_scope", "leave_scope", "opaque_map",
           "plain_map", "transactional_map"]


def enter_scope(scope: Any) -> contextvars.Token[Any]:
    """Make ``scope`` (a ``TaskScope``, or the local engine's ``LocalMaps``: anything with
    ``buffer(name, kind)`` and ``read(buffer, keys)``) the one map handles use, around an
    engine's call into a bolt; undo with :func:`leave_scope`."""
    return _current.set(scope)


def leave_scope(token: contextvars.Token[Any]) -> None:
    _current.reset(token)


class MapBuffer:
    """One map's reads and pending writes inside one TaskScope.

    ``ops`` maps key -> ``[op, operand]`` with op ``"i"`` (add operand,
    applied server-side) or ``"s"`` (set operand). ``base`` holds values read
    from Redis as this txid sees them; ``applied`` the transactional keys
    whose stored txid is already ours (replay: their writes are dropped).
    """

    __slots__ = ("applied", "base", "kind", "name", "ops", "scope")

    def __init__(self, scope: Any, name: str, kind: str):
        self.scope = scope
        self.name = name
        self.kind = kind
        self.ops: dict[Any, list[Any]] = {}
        self.base: dict[Any, Any] = {}
        self.applied: set[Any] = set()

    # -- writes
    def increment(self, key: Any, by: Any = 1) -> None:
        e = self.ops.get(key)
        if e is None:
            if key in self.applied:
                return
            self.ops[key] = ["i", by]
        else:
            e[1] = e[1] + by

    def put(self, key: Any, value: Any) -> None:
        if key in self.applied:
            return
        self.ops[key] = ["s", value]

    # -- reads
    def get(self, key: Any, default: Any = None) -> Any:
        e = self.ops.get(key)
        if e is not None and e[0] == "s":
            return e[1]
        if key not in self.base:
            self.scope.read(self, [key])
        e = self.ops.get(key)  # a read may drop ops of an applied transactional key
        base = self.base[key]
        if e is None:
            return default if base is _MISSING else base
        return e[1] if base is _MISSING else base + e[1]

    def get_many(self, keys: Iterable[Any], default: Any = None) -> list[Any]:
        keys = list(keys)
        todo = [k for k in dict.fromkeys(keys) if k not in self.base and not self._is_set(k)]
        if todo:
            self.scope.read(self, todo)
        return [self.get(k, default) for k in keys]

    def _is_set(self, key: Any) -> bool:
        e = self.ops.get(key)
        return e is not None and e[0] == "s"

    def absorb(self, key: Any, rec: bytes | None, txid: int) -> None:
        """Take one record read from Redis into ``base`` (called by the scope)."""
        data, applied = visible(self.kind, rec, txid)
        self.base[key] = decode_value(data) if data else _MISSING
        if applied:
            self.applied.add(key)
            self.ops.pop(key, None)


class MapHandle:
    """A named map, bound to whichever TaskScope is running when it is used."""

    __slots__ = ("_buf", "_scope", "kind", "name")

    def __init__(self, name: str, kind: str):
        if kind not in KINDS:
            raise ValueError(f"state map kind must be one of {KINDS}, not {kind!r}")
        self.name = K.check_name("map name", name)
        self.kind = kind
        self._scope: Any = None
        self._buf: MapBuffer | None = None

    def _buffer(self) -> MapBuffer:
        scope = _current.get()
        if scope is None:
            raise StateError(
                f"state map {self.name!r} used outside a task batch: maps buffer writes per "
                "txid and need the engine's TaskScope. Fix: run the bolt under a stormshift "
                "engine, or in tests under stormshift.testing.run_bolt"
            )
        if scope is not self._scope or self._buf is None:
            self._scope = scope
            self._buf = scope.buffer(self.name, self.kind)
        return self._buf

    def increment(self, key: Any, by: float = 1) -> None:
        """Add ``by`` to the value at ``key`` (absent counts as 0); no read needed."""
        buf = self._buf
        if buf is None or _current.get() is not self._scope:
            buf = self._buffer()
        ops = buf.ops
        e = ops.get(key)
        if e is None:
            if key not in buf.applied:
                ops[key] = ["i", by]
        else:
            e[1] = e[1] + by

    def put(self, key: Any, value: Any) -> None:
        self._buffer().put(key, value)

    def get(self, key: Any, default: Any = None) -> Any:
        """The value as this batch sees it, including its own buffered writes."""
        return self._buffer().get(key, default)

    def get_many(self, keys: Iterable[Any], default: Any = None) -> list[Any]:
        """Values of many keys, read in one round trip."""
        return self._buffer().get_many(keys, default)

    def update(self, key: Any, fn: Callable[[Any], Any], default: Any = None) -> Any:
        """Set ``key`` to ``fn(current value or default)`` and return the new value."""
        buf = self._buffer()
        new = fn(buf.get(key, default))
        buf.put(key, new)
        return new

    def __repr__(self) -> str:
        return f"{self.kind}_map({self.name!r})"


def opaque_map(name: str) -> MapHandle:
    """An opaque map (prev, curr, txid): exactly-once even if a replayed batch differs."""
    return MapHandle(name, "opaque")


def transactional_map(name: str) -> MapHandle:
    """A transactional map (value, txid): exactly-once when replays hold the same tuples."""
    return MapHandle(name, "transactional")


def plain_map(name: str) -> MapHandle:
    """A non-transactional map (value only): at-least-once."""
    return MapHandle(name, "plain")
