"""Tuples exactly as pystorm builds them, and values as they travel on the wire.

A bolt receives ``pystorm.component.Tuple(id, component, stream, task,
values)`` with ``values`` a namedtuple of the source stream's declared
fields, named as pystorm names it (``WordSpoutDefaultTuple``), so
``tup.values.word`` works as it does under Storm.

``to_wire`` is what happens to emitted values in Storm's multilang JSON
pipe: tuples become lists, containers are copied (a later mutation by the
user cannot change what was emitted), and anything Storm could not carry
(sets, bytes, objects, NaN/Infinity, ints beyond 64 bits, non-scalar dict
keys) is a ``TupleError`` naming the component, stream and field.

Tuple ids come from a pluggable generator (a zero-argument callable
returning ``str``): ``counter_ids`` (local engine), ``random_ids`` (64-bit
like Storm, seeded) or ``batch_ids(txid, task)`` (Spark engine:
``"{txid}:{task}:{seq}"``).
"""

from __future__ import annotations

import itertools
import json
import math
import random
import re
from collections import namedtuple
from collections.abc import Callable, Sequence
from decimal import Decimal
from typing import Any

from pystorm.component import Tuple

from stormshift.errors import TupleError
from stormshift.topology.graph import TopologyGraph

__all__ = [
    "IdGenerator",
    "Tuple",
    "TupleFactory",
    "batch_ids",
    "counter_ids",
    "random_ids",
    "tick_tuple",
    "to_wire",
    "values_type_name",
]

IdGenerator = Callable[[], str]

# pystorm.bolt._IDENTIFIER_RE: non-word characters and a leading digit -> "_"
_IDENTIFIER_RE = re.compile(r"\W|^(?=\d)")
_INT64_MIN = -(2**63)
_INT64_MAX = 2**63 - 1
_SCALAR_KEYS = (str, int, float, bool, type(None))


def values_type_name(source: str, stream: str) -> str:
    """The namedtuple class name pystorm gives ``source``'s ``stream`` values."""
    return (
        _IDENTIFIER_RE.sub("_", source.title()) + _IDENTIFIER_RE.sub("_", stream.title()) + "Tuple"
    )


def tick_tuple(tuple_id: str) -> Tuple:
    """A tick tuple as Storm delivers it to ``process_tick``."""
    return Tuple(tuple_id, "__system", "__tick", -1, ())


class TupleFactory:
    """Builds the tuples one consumer component receives."""

    def __init__(self, graph: TopologyGraph, consumer: str):
        self.graph = graph
        self.consumer = consumer
        comp = graph.component(consumer)
        # As Storm's context: every stream of every source this consumer reads.
        self.types: dict[tuple[str, str], type] = {}
        for source in sorted({i.source for i in comp.inputs}):
            for stream in sorted(graph.component(source).outputs):
                fields = graph.stream_fields(source, stream)
                self.types[(source, stream)] = namedtuple(  # type: ignore[misc]
                    values_type_name(source, stream), fields
                )

    def make(
        self, source: str, stream: str, source_task_id: int, values: Sequence[Any], tuple_id: str
    ) -> Tuple:
        vtype: Any = self.types.get((source, stream))
        if vtype is None:
            return Tuple(tuple_id, source, stream, source_task_id, tuple(values))
        try:
            return Tuple(tuple_id, source, stream, source_task_id, vtype._make(values))
        except TypeError:
            raise self._arity_error(source, stream, values, vtype) from None

    def maker(self, source: str, stream: str) -> Callable[[Sequence[Any], str, int], Tuple]:
        """A specialised ``make`` for one (source, stream): ``fn(values, tuple_id, task)``.

        For engines decoding a whole partition: skips the per-tuple type lookup.
        """
        vtype: Any = self.types.get((source, stream))
        # tuple.__new__ directly: the namedtuples' own __new__/_make are Python functions,
        # a frame each per tuple (~0.3 µs together); the result is the same object.
        new = tuple.__new__
        if vtype is None:

            def make_any(values: Sequence[Any], tuple_id: str, task: int) -> Tuple:
                return new(Tuple, (tuple_id, source, stream, task, tuple(values)))

            return make_any
        arity = len(vtype._fields)

        def make_one(values: Sequence[Any], tuple_id: str, task: int) -> Tuple:
            if len(values) != arity:
                raise self._arity_error(source, stream, values, vtype)
            return new(Tuple, (tuple_id, source, stream, task, new(vtype, values)))

        return make_one

    def _arity_error(self, source: str, stream: str, values: Any, vtype: Any) -> TupleError:
        fields = list(vtype._fields)
        return TupleError(
            f"tuple for {self.consumer!r} has {len(values)} values {list(values)!r} but "
            f"{source!r} declares {len(fields)} fields {fields} on this stream. "
            f"fix: make {source!r} emit one value per declared field",
            component=source,
            stream=stream,
            values=values,
        )


# -- wire check --------------------------------------------------------
def to_wire(
    values: Sequence[Any], component: str, stream: str, fields: Sequence[str] = ()
) -> list[Any]:
    """``values`` as they arrive after Storm's JSON pipe (a new list).

    Flat lists of str/int/bool/None/finite float cost one type test per
    value; containers are rebuilt (copied) while being checked.
    """
    if not isinstance(values, (list, tuple)):
        raise TupleError(
            f"emit needs a list or tuple of values, got {type(values).__name__} {values!r}. "
            "fix: wrap the value, e.g. self.emit([value])",
            component=component,
            stream=stream,
            values=values,
        )
    out = list(values)
    for i, v in enumerate(out):
        t = type(v)
        if t is str or v is None or t is bool:
            continue
        if t is int:
            if _INT64_MIN <= v <= _INT64_MAX:
                continue
        elif t is float and v - v == 0.0:  # finite (NaN and +-inf give nan)
            continue
        try:
            out[i] = _wire_value(v)
        except _WireError as err:
            where = fields[i] if i < len(fields) else f"#{i}"
            raise TupleError(
                f"field {where!r} {err.path}is {err.what}, which Storm cannot send "
                f"(its multilang pipe is JSON). fix: {err.fix}",
                component=component,
                stream=stream,
                values=values,
            ) from None
    return out


class _WireError(Exception):
    def __init__(self, what: str, fix: str, path: str = ""):
        self.what, self.fix, self.path = what, fix, path


MAX_NESTING = 100
"""Deepest nesting of lists/dicts in an emitted value (a cycle never ends; Python's
recursion limit would otherwise end it with a RecursionError deep inside the check)."""


def _wire_value(v: Any, path: str = "", depth: int = 0) -> Any:
    """One value in wire form (containers copied), or ``_WireError``."""
    t = type(v)
    if v is None or t is str or t is bool:
        return v
    if isinstance(v, str):
        return str(v)
    if isinstance(v, int):
        if not _INT64_MIN <= v <= _INT64_MAX:
            raise _WireError(f"the int {v} (beyond 64 bits)", "send it as a str", path)
        return int(v)
    if isinstance(v, float):
        if not math.isfinite(v):
            raise _WireError(f"{v!r}", "send None (or a str) for missing/infinite numbers", path)
        return float(v)
    if isinstance(v, Decimal):
        if not v.is_finite():
            raise _WireError(f"Decimal {v}", "send None (or a str) instead", path)
        return json.loads(str(v))  # as the JSON number arrives: int or float
    if isinstance(v, (list, tuple, dict)) and depth >= MAX_NESTING:
        raise _WireError(
            f"nested deeper than {MAX_NESTING} lists/dicts (or contains itself)",
            "flatten the value (or send it as a JSON str)",
            path[:200] + "... " if len(path) > 200 else path,
        )
    if isinstance(v, (list, tuple)):
        return [_wire_value(x, f"{path}[{i}] ", depth + 1) for i, x in enumerate(v)]
    if isinstance(v, dict):
        out = {}
        for k, x in v.items():
            out[_wire_key(k, path)] = _wire_value(x, f"{path}[{k!r}] ", depth + 1)
        return out
    if isinstance(v, (bytes, bytearray, memoryview)):
        raise _WireError(
            f"{type(v).__name__} {bytes(v)[:20]!r}",
            "decode it (or base64-encode it) to a str",
            path,
        )
    if isinstance(v, (set, frozenset)):
        raise _WireError(f"a {type(v).__name__}", "send sorted(list(...)) instead", path)
    raise _WireError(
        f"a {type(v).__module__}.{type(v).__qualname__} object",
        "send plain str/int/float/bool/None or lists/dicts of them",
        path,
    )


def _wire_key(k: Any, path: str) -> str:
    """Dict keys as JSON writes them (str; int/float/bool/None converted)."""
    if type(k) is str:
        return k
    if isinstance(k, _SCALAR_KEYS):
        return json.dumps(k) if not isinstance(k, str) else str(k)
    raise _WireError(f"a dict with a {type(k).__name__} key {k!r}", "use str keys", path)


# -- tuple id generators -----------------------------------------------
def counter_ids(start: int = 1, prefix: str = "") -> IdGenerator:
    """``"1"``, ``"2"``, ... (optionally prefixed): unique within one run."""
    counter = itertools.count(start)
    if prefix:
        return lambda: f"{prefix}{next(counter)}"
    return lambda: str(next(counter))


def random_ids(seed: int) -> IdGenerator:
    """Signed 64-bit ids like Storm's, from a seeded generator (reproducible)."""
    rng = random.Random(seed)
    return lambda: str(rng.getrandbits(64) - 2**63)


def batch_ids(txid: int, task: int) -> IdGenerator:
    """``"{txid}:{task}:{seq}"``: deterministic ids for one task's batch."""
    counter = itertools.count()
    return lambda: f"{txid}:{task}:{next(counter)}"
