"""Dead letters: tuples that could not be processed, kept with their reason.

Bad input (wrong arity, undecodable payload, a bolt that raises on one
tuple) goes here instead of stopping the topology. Entries live in a Redis
stream per namespace. ``add`` is idempotent per (component, stream, txid,
values): a replayed batch dead-letters the same tuple once. Values are
msgpack-encoded (never pickled).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import msgpack

from stormshift.state import keys as K
from stormshift.state.connection import retrying, run_scripts

__all__ = ["DeadLetter", "DeadLetters"]


@dataclass(frozen=True)
class DeadLetter:
    """One dead-lettered tuple."""

    id: str
    component: str
    stream: str
    values: Any
    error: str
    traceback: str
    txid: int

    def as_dict(self) -> dict[str, Any]:
        return {
            "id": self.id, "component": self.component, "stream": self.stream,
            "values": self.values, "error": self.error, "traceback": self.traceback,
            "txid": self.txid,
        }


def _pack(values: Any) -> bytes:
    try:
        return msgpack.packb(values, use_bin_type=True)
    except (TypeError, ValueError):
        return msgpack.packb(repr(values), use_bin_type=True)


class DeadLetters:
    """The dead-letter stream of one namespace."""

    def __init__(self, r: Any, namespace: str):
        self.r = r
        self.namespace = K.check_name("namespace", namespace)
        self.key = K.dlq_key(namespace)

    def add(
        self,
        component: str,
        stream: str,
        values: Any,
        error: str,
        traceback: str,
        txid: int,
    ) -> str:
        """Dead-letter one tuple; returns its entry id (the existing one on a replay)."""
        packed = _pack(values)
        digest = hashlib.sha256(
            b"|".join([component.encode(), stream.encode(), str(txid).encode(), packed])
        ).hexdigest()
        fields = ["component", component, "stream", stream, "values", packed,
                  "error", error, "traceback", traceback, "txid", txid]
        (entry_id,) = run_scripts(
            self.r, [("dlq_add", [self.key, K.dlq_ids_key(self.namespace)], [digest, *fields])]
        )
        return entry_id.decode() if isinstance(entry_id, bytes) else str(entry_id)

    @retrying
    def list(self, component: str | None = None, limit: int | None = None) -> list[DeadLetter]:
        """Entries oldest first, optionally of one component."""
        out = []
        for entry_id, raw in self.r.xrange(self.key):
            d = _decode(entry_id, raw)
            if component is None or d.component == component:
                out.append(d)
                if limit is not None and len(out) >= limit:
                    break
        return out

    def count(self) -> int:
        return int(self.r.xlen(self.key))

    def remove(self, ids: Sequence[str]) -> int:
        return int(self.r.xdel(self.key, *ids)) if ids else 0

    def replay(
        self,
        handler: Callable[[DeadLetter], Any],
        *,
        component: str | None = None,
        delete: bool = True,
    ) -> int:
        """Call ``handler`` for each entry in order; entries it handles without raising are
        removed (``delete``). Stops at the first entry whose handler raises (re-raised)."""
        done = 0
        for letter in self.list(component=component):
            handler(letter)
            if delete:
                self.remove([letter.id])
            done += 1
        return done


def _decode(entry_id: Any, raw: dict[bytes, bytes]) -> DeadLetter:
    g = {k.decode(): v for k, v in raw.items()}
    return DeadLetter(
        id=entry_id.decode() if isinstance(entry_id, bytes) else str(entry_id),
        component=g["component"].decode(),
        stream=g["stream"].decode(),
        values=msgpack.unpackb(g["values"], raw=False),
        error=g["error"].decode(errors="replace"),
        traceback=g["traceback"].decode(errors="replace"),
        txid=int(g["txid"]),
    )
