"""Whether a source record can be a Storm tuple: pure, no engine, no server.

A built-in spout reads records; each one either becomes a tuple or is
dead-lettered *at the spout*, with a reason, its position and the raw record
(DESIGN: bad input goes to dead letters, nothing else is lost). The decision
lives here, once, so both engines make the same one:

- ``decode``: the bytes are no record at all (not UTF-8, not JSON);
- ``value``: the record decodes, but Storm could not send it as a tuple of the
  spout's declared fields -- a value its multilang JSON pipe cannot carry (NaN,
  +-Infinity, ints beyond 64 bits, bytes, ...; ``adapters.tuples.to_wire`` is
  the one judge), a JSON object missing a field, or the wrong number of values
  (arity).

Why at the spout: a spout whose ``emit`` raises is restarted and meets the same
record again (the local engine re-read one line 76 times and left the rest of
the file unread), while the Spark engine dead-lettered it at the bolt; deciding
here before the emit makes the engines agree and keeps the spout moving.

:class:`RecordDecodeError` (re-exported by ``spouts/base.py``, where readers
raise it) is the dead letter of one such record: reason, position, raw record.

Plain Python on purpose: the JSON-lines reader is also compiled with Cython
from the same source.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, NamedTuple

from stormshift.errors import TupleError

__all__ = ["DECODE", "RAW_LIMIT", "VALUE", "Bad", "RecordDecodeError", "classify_json", "msg_id_for",
           "plain", "truncate_raw", "unsendable"]

DECODE = "decode"
VALUE = "value"
RAW_LIMIT = 2000
"""Characters of a raw record a dead letter keeps (per text field): a 50 MB bad line must
not become a 50 MB Redis entry; the position says where the rest is."""

_INT64_MIN = -(2**63)
_INT64_MAX = 2**63 - 1


class Bad(NamedTuple):
    """Why a record is no tuple: ``reason`` (``decode`` / ``value``) and a readable detail."""

    reason: str
    detail: str


def unsendable(values: Any, arity: int | None, fields: Sequence[str] = ()) -> str | None:
    """Why Storm could not send ``values`` as one tuple of ``arity`` fields, or None.

    Flat lists of str/None/bool/64-bit int/finite float cost one type test per value
    (the common case); anything else is judged by ``to_wire``, the emit path's own check,
    so the spout refuses exactly what its emit would have raised on.
    """
    if not isinstance(values, (list, tuple)):
        return f"a record must be a list of values, got {type(values).__name__}"
    if arity is not None and len(values) != arity:
        names = f" {list(fields)}" if fields else ""
        return f"{len(values)} values for the spout's {arity} declared fields{names}"
    for v in values:
        t = type(v)
        if t is str or v is None or t is bool:
            continue
        if t is int and _INT64_MIN <= v <= _INT64_MAX:
            continue
        if t is float and v - v == 0.0:  # finite (NaN and +-inf give nan)
            continue
        return _wire_problem(values, fields)
    return None


def _wire_problem(values: Any, fields: Sequence[str]) -> str | None:
    from stormshift.adapters.tuples import to_wire

    try:
        to_wire(values, "spout", "default", fields)
    except TupleError as err:
        return str(err).removeprefix("component 'spout', stream 'default': ")
    return None


def classify_json(text: str, fields: Sequence[str], arity: int | None = None) -> list[Any] | Bad:
    """One JSON-lines / payload record: its tuple values for ``fields``, or why it has none.

    ``arity`` is the spout's declared field count (None: not known, not checked).
    Python's ``json`` reads ``NaN`` and ``Infinity`` (not JSON, but common in logs): they
    decode, then fail as ``value``s.
    """
    try:
        obj = json.loads(text)
    except ValueError as exc:
        return Bad(DECODE, f"not JSON ({exc})")
    if not isinstance(obj, dict):
        return Bad(VALUE, f"expected a JSON object with fields {list(fields)}, "
                          f"got {type(obj).__name__}")
    try:
        values = [obj[f] for f in fields]
    except KeyError as exc:
        return Bad(VALUE, f"missing field {exc.args[0]!r} (expected {list(fields)})")
    why = unsendable(values, arity, fields)
    if why is not None:
        return Bad(VALUE, why)
    return values


def truncate_raw(raw: Any, limit: int = RAW_LIMIT) -> Any:
    """``raw`` with every text longer than ``limit`` cut, saying how long it was."""
    if isinstance(raw, str):
        if len(raw) <= limit:
            return raw
        return f"{raw[:limit]}... ({len(raw):,} characters in all)"
    if isinstance(raw, (bytes, bytearray)):
        return truncate_raw(bytes(raw).decode("utf-8", errors="backslashreplace"), limit)
    if isinstance(raw, dict):
        return {str(k): truncate_raw(v, limit) for k, v in raw.items()}
    if isinstance(raw, (list, tuple)):
        return [truncate_raw(v, limit) for v in raw]
    return raw


class RecordDecodeError(TupleError):
    """A source record that cannot become a tuple (bad JSON, NaN, missing field...).

    ``values`` is ``[raw]`` (the record as read, text when it decodes as UTF-8, long
    texts truncated: ``values.truncate_raw``) so the dead-letter stream keeps it;
    ``partition``/``offset`` say where it is, so a reader resumes with
    ``replay_read(partition, offset, end)``. ``kind`` is the dead letter's reason:
    ``decode`` (no record at all) or ``value`` (decodes, but Storm cannot send it).
    """

    def __init__(self, reason: str, *, component: str, partition: str, offset: Any, raw: Any,
                 kind: str = DECODE):
        self.partition = partition
        self.offset = offset
        self.raw = truncate_raw(raw)
        self.reason = reason
        self.kind = kind
        what = "cannot be decoded" if kind == DECODE else "cannot be sent as a tuple"
        super().__init__(
            f"record {msg_id_for(partition, offset)} {what}: {reason} "
            f"(raw record kept in the dead-letter stream; fix the producer or the "
            f"spout's field config)",
            component=component,
            values=[self.raw],
        )

    @property
    def position(self) -> str:
        """Where the record is: ``file:line``, ``stream:entry id``, ``topic/partition:offset``."""
        return msg_id_for(self.partition, self.offset)


def plain(values: Any) -> bool:
    """Values a dead letter keeps as they are (msgpack-able scalars and containers)."""
    return all(v is None or isinstance(v, (str, int, float, bool, list, dict)) for v in values) \
        if isinstance(values, (list, tuple)) else False


def msg_id_for(partition: str, offset: Any) -> str:
    """The Storm tuple id of the record ending at ``offset`` in ``partition``."""
    return f"{partition}:{offset}"
