"""The stable hash behind fields groupings.

CRC-32 (``zlib.crc32``) of a canonical, type-tagged encoding of the values:
identical across processes, runs and ``PYTHONHASHSEED`` (Python's ``hash()``
is salted per process, so it can never route). Values that are equal after
Storm's JSON pipe hash equally: a tuple and the list it becomes, dicts in any
key order.
"""

from __future__ import annotations

import json
import zlib
from collections.abc import Sequence
from typing import Any

__all__ = ["hash_one", "stable_hash"]

_SEP = b"\x1f"
STR_SEED = zlib.crc32(b"s")
_INT_SEED = zlib.crc32(b"i")


def _encode(value: Any) -> bytes:
    """Canonical bytes of one grouping value: a type tag, then the payload.

    str ``s<utf-8>``, int ``i<decimal>``, bool ``b0``/``b1``, None ``n``,
    float ``f<repr>``, bytes ``y<raw>``, list/tuple/dict ``j<canonical JSON>``
    (sorted keys, so a dict's insertion order does not matter; tuples encode
    like lists, as they arrive as lists after the wire).
    """
    t = type(value)
    if t is str:
        return b"s" + value.encode("utf-8", "surrogatepass")
    if t is bool:
        return b"b1" if value else b"b0"
    if t is int:
        return b"i" + str(value).encode()
    if value is None:
        return b"n"
    if t is float:
        return b"f" + repr(value).encode()
    if isinstance(value, str):
        return b"s" + str(value).encode("utf-8", "surrogatepass")
    if isinstance(value, bool):
        return b"b1" if value else b"b0"
    if isinstance(value, int):
        return b"i" + str(int(value)).encode()
    if isinstance(value, (bytes, bytearray)):
        return b"y" + bytes(value)
    if isinstance(value, (list, tuple, dict)):
        text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        return b"j" + text.encode("utf-8", "surrogatepass")
    raise TypeError(
        f"cannot hash a {type(value).__name__} for a fields grouping "
        "(use str, int, float, bool, None, or lists/dicts of them)"
    )


def stable_hash(values: Sequence[Any]) -> int:
    """CRC-32 of the values' canonical encodings joined by 0x1F.

    Identical across processes, runs and ``PYTHONHASHSEED``; equal values
    (a tuple and the list it becomes on the wire, dicts in any key order)
    hash equally.
    """
    if len(values) == 1:
        return hash_one(values[0])
    return zlib.crc32(_SEP.join([_encode(v) for v in values]))


def hash_one(value: Any) -> int:
    """``stable_hash([value])`` with a fast path for a single str or int."""
    t = type(value)
    if t is str:
        return zlib.crc32(value.encode("utf-8", "surrogatepass"), STR_SEED)
    if t is int:
        return zlib.crc32(str(value).encode(), _INT_SEED)
    return zlib.crc32(_encode(value))
