"""Compact, Lua-readable encodings of map keys, values and records (never pickle).

A value is one tag byte then a body: ``i`` decimal int, ``f`` float (repr),
``m`` msgpack for everything else. Numbers stay decimal so the write scripts
can add to them server-side (an increment needs no read round trip). Records
prefix the txid so a script can compare it without decoding the value:
transactional ``"<txid>|<value>"``, opaque ``"<txid>|<len(prev)>|<prev><curr>"``
(an empty encoding means "absent").
"""

from __future__ import annotations

import math
import threading
from typing import Any

import msgpack

from stormshift.errors import StateFormatError

INT_LIMIT = 2**53  # server-side increments are exact below this (Lua numbers are doubles)
_packb = msgpack.packb


_local = threading.local()


def key_packer() -> Any:
    """This thread's msgpack packer (Packer is fast but not thread-safe)."""
    p = getattr(_local, "packer", None)
    if p is None:
        p = _local.packer = msgpack.Packer(use_bin_type=True)
    return p.pack


def encode_key(key: Any) -> bytes:
    """Map key -> hash field. Lists and tuples encode alike (both msgpack arrays)."""
    return key_packer()(key)


def decode_key(field: bytes) -> Any:
    """Hash field -> map key; arrays come back as tuples so keys stay hashable."""
    return _tuples(msgpack.unpackb(field, raw=False, strict_map_key=False))


def encode_value(value: Any) -> bytes:
    t = type(value)
    if t is int:  # decimal at any size; the scripts refuse to add beyond 2^53
        return b"i%d" % value
    if t is float and math.isfinite(value):
        return b"f" + repr(value).encode()
    return b"m" + _packb(value, use_bin_type=True)


def encode_delta(by: Any) -> bytes:
    """Operand of an increment; only finite ints (|x| < 2^53) and floats are accepted."""
    t = type(by)
    if t is int and -INT_LIMIT < by < INT_LIMIT:
        return b"i%d" % by
    if (t is int and -INT_LIMIT < by < INT_LIMIT) or (t is float and math.isfinite(by)):
        return encode_value(by)
    raise TypeError(f"increment needs an int below 2**53 or a finite float, got {by!r}")


def decode_value(data: bytes) -> Any:
    if not data:
        return None
    tag = data[:1]
    if tag == b"i":
        return int(data[1:])
    if tag == b"f":
        return float(data[1:])
    if tag == b"m":
        return msgpack.unpackb(data[1:], raw=False, strict_map_key=False)
    raise StateFormatError(f"state value with unknown encoding tag {tag!r}")


def _tuples(v: Any) -> Any:
    return tuple(_tuples(x) for x in v) if isinstance(v, list) else v


def split_transactional(rec: bytes) -> tuple[int, bytes]:
    """``(txid, value)`` of a transactional record."""
    a = rec.index(b"|")
    return int(rec[:a]), rec[a + 1 :]


def split_opaque(rec: bytes) -> tuple[int, bytes, bytes]:
    """``(txid, prev, curr)`` of an opaque record (b"" = absent)."""
    a = rec.index(b"|")
    b = rec.index(b"|", a + 1)
    lp = int(rec[a + 1 : b])
    return int(rec[:a]), rec[b + 1 : b + 1 + lp], rec[b + 1 + lp :]


def visible(kind: str, rec: bytes | None, txid: int) -> tuple[bytes, bool]:
    """What a batch with ``txid`` sees for a stored record, and whether it is already applied.

    transactional: the stored value; applied when its txid is ours (replay: skip).
    opaque: ``prev`` when the stored txid is ours (replay: recompute), else ``curr``.
    plain: the stored value.
    """
    if rec is None:
        return b"", False
    if kind == "transactional":
        t, v = split_transactional(rec)
        return v, t == txid
    if kind == "opaque":
        t, prev, curr = split_opaque(rec)
        return (prev if t == txid else curr), False
    return rec, False


def committed_view(kind: str, rec: bytes) -> tuple[Any, int | None]:
    """``(value, txid)`` as an operator sees it (latest written value)."""
    if kind == "transactional":
        t, v = split_transactional(rec)
        return decode_value(v), t
    if kind == "opaque":
        t, _prev, curr = split_opaque(rec)
        return decode_value(curr), t
    return decode_value(rec), None
