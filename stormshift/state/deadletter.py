"""Dead letters: tuples that could not be processed, kept with their reason.

Bad input (wrong arity, undecodable payload, a bolt that raises on one
tuple) goes here instead of stopping the topology. Entries live in a Redis
stream per namespace. Values are msgpack-encoded (never pickled).

Identity: ``add`` is idempotent per (component, stream, txid, values,
``tuple_key``). ``tuple_key`` is the tuple's deterministic identity in its
batch (the Spark stage passes its tuple id ``txid:task:n``; a replayable
spout passes ``partition:offset``), so a replayed batch dead-letters each
tuple once while two identical bad tuples of one batch stay two entries --
the counts add up. Without ``tuple_key`` identical tuples collapse (the old
behaviour, kept for callers that have no identity to give).

Every entry also says where the tuple came from (``source``: the component
that emitted it; ``task``: the index of the consuming task) and why it is
here (``reason``: ``raised``, ``arity``, ``emit``, ``encode``, ``fail`` --
the retry policy in ``adapters/retry_policy.py`` --, ``decode``: a spout record
that is no record at all, ``value``: a spout record that decodes to values Storm
cannot send (NaN, +-Infinity, wrong arity: ``spouts/values.py``), ``redrive``: a
replayed entry that no longer fits the topology). Entries written before these fields existed decode with them as None.

Transactional with the batch: an entry of txid N is also indexed under N
until N commits (``settle``). A batch that is re-run (its driver died before
the commit) first ``discard``s what its earlier attempt dead-lettered; the
re-run adds back what it dead-letters itself, so a tuple that failed only in
the lost attempt (a transient error) is not left behind to be redriven and
counted twice. Spout records (txid -1) are keyed by offset and never discarded.
"""

from __future__ import annotations

import builtins
import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import msgpack

from stormshift.state import keys as K
from stormshift.state.client import Redis
from stormshift.state.connection import Call, retrying
from stormshift.state.lua_ns import DLQ_ADD, DLQ_DISCARD

__all__ = ["DeadLetter", "DeadLetters", "decode_entry", "entry", "fenced_add_call", "plain"]


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
    source: str | None = None
    tuple_key: str | None = None
    task: int | None = None
    reason: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return {
            "id": self.id, "component": self.component, "stream": self.stream,
            "values": self.values, "error": self.error, "traceback": self.traceback,
            "txid": self.txid, "source": self.source, "tuple_key": self.tuple_key,
            "task": self.task, "reason": self.reason,
        }


def plain(values: Any) -> Any:
    """``values`` if msgpack can keep them, else their reprs, one per value when they are a
    list (a dead letter is never lost, and keeps what can be kept). Every engine's
    dead-letterer (a stage task, a spout's planner or read) passes values through it."""
    try:
        msgpack.packb(values, use_bin_type=True)
        return values
    except (TypeError, ValueError, OverflowError):
        return [repr(v) for v in values] if isinstance(values, (list, tuple)) else repr(values)


def _pack(values: Any) -> bytes:
    try:
        return msgpack.packb(values, use_bin_type=True)
    except (TypeError, ValueError):
        return msgpack.packb(repr(values), use_bin_type=True)


class DeadLetters:
    """The dead-letter stream of one namespace."""

    def __init__(self, r: Redis, namespace: str):
        self.r = r
        self.namespace = K.check_name("namespace", namespace)
        self.key = K.dlq_key(namespace)
        self.ids_key = K.dlq_ids_key(namespace)
        self._add = r.register_script(DLQ_ADD)
        self._discard = r.register_script(DLQ_DISCARD)

    def txid_key(self, txid: int) -> str:
        return K.dlq_txid_key(self.namespace, txid)

    @retrying
    def add(
        self,
        component: str,
        stream: str,
        values: Any,
        error: str,
        traceback: str,
        txid: int,
        *,
        source: str | None = None,
        tuple_key: str | None = None,
        task: int | None = None,
        reason: str | None = None,
    ) -> str:
        """Dead-letter one tuple; returns its entry id (the existing one on a replay)."""
        digest, fields = entry(component, stream, values, error, traceback, txid, source=source,
                               tuple_key=tuple_key, task=task, reason=reason)
        keys = [self.key, self.ids_key] + ([self.txid_key(txid)] if txid >= 0 else [])
        entry_id = self._add(keys=keys, args=[digest, *fields])
        return entry_id.decode() if isinstance(entry_id, bytes) else str(entry_id)

    @retrying
    def discard(self, txid: int) -> int:
        """Drop what an uncommitted earlier attempt of batch ``txid`` dead-lettered (module doc)."""
        return int(self._discard(keys=[self.key, self.ids_key, self.txid_key(txid)]))

    @retrying
    def settle(self, txid: int) -> None:
        """Batch ``txid`` committed: its entries are final (only the index goes)."""
        self.r.delete(self.txid_key(txid))

    @retrying
    def list(self, component: str | None = None, limit: int | None = None) -> list[DeadLetter]:
        """Entries oldest first, optionally of one component."""
        out = []
        for entry_id, raw in self.r.xrange(self.key):
            d = decode_entry(entry_id, raw)
            if component is None or d.component == component:
                out.append(d)
                if limit is not None and len(out) >= limit:
                    break
        return out

    def count(self) -> int:
        return int(self.r.xlen(self.key))

    @retrying
    def last_id(self) -> str:
        """The id of the newest entry ("0-0" if none): a mark for ``since``."""
        newest = self.r.xrevrange(self.key, count=1)
        if not newest:
            return "0-0"
        entry_id = newest[0][0]
        return entry_id.decode() if isinstance(entry_id, bytes) else str(entry_id)

    @retrying
    def since(self, mark: str) -> builtins.list[DeadLetter]:
        """Entries added after ``mark`` (from ``last_id``), oldest first."""
        return [decode_entry(i, raw) for i, raw in self.r.xrange(self.key, min=f"({mark}")]

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


def entry(component: str, stream: str, values: Any, error: str, traceback: str, txid: int, *,
          source: str | None = None, tuple_key: str | None = None, task: int | None = None,
          reason: str | None = None) -> tuple[str, list[Any]]:
    """``(digest, field/value list)`` of one entry: its identity (module doc) and its fields."""
    packed = _pack(values)
    parts = [component.encode(), stream.encode(), str(txid).encode(), packed]
    if tuple_key is not None:
        parts.append(b"key=" + tuple_key.encode())
    digest = hashlib.sha256(b"|".join(parts)).hexdigest()
    fields: list[Any] = ["component", component, "stream", stream, "values", packed,
                         "error", error, "traceback", traceback, "txid", txid]
    for name, value in (("source", source), ("tuple_key", tuple_key), ("task", task),
                        ("reason", reason)):
        if value is not None:
            fields += [name, value]
    return digest, fields


def fenced_add_call(namespace: str, epoch: int, txid: int, who: str, digest: str,
                    fields: Sequence[Any]) -> Call:
    """The fenced script call adding one entry of a task attempt ``(txid, epoch)`` (pure)."""
    keys = [K.epochs_key(namespace), K.commit_key(namespace), K.dlq_key(namespace),
            K.dlq_ids_key(namespace), K.dlq_txid_key(namespace, txid)]
    return ("dlq_add_fenced", keys, [epoch, txid, who, digest, *fields])


def _text(raw: bytes | None) -> str | None:
    return None if raw is None else raw.decode(errors="replace")


def decode_entry(entry_id: Any, raw: dict[bytes, bytes]) -> DeadLetter:
    """One stream entry (dead-letter or redrive stream) as a DeadLetter."""
    g = {k.decode(): v for k, v in raw.items()}
    task = g.get("task")
    return DeadLetter(
        id=entry_id.decode() if isinstance(entry_id, bytes) else str(entry_id),
        component=g["component"].decode(),
        stream=g["stream"].decode(),
        values=msgpack.unpackb(g["values"], raw=False),
        error=g["error"].decode(errors="replace"),
        traceback=g["traceback"].decode(errors="replace"),
        txid=int(g["txid"]),
        source=_text(g.get("source")),
        tuple_key=_text(g.get("tuple_key")),
        task=None if task is None else int(task),
        reason=_text(g.get("reason")),
    )

