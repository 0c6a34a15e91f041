"""In-flight tuples: the bolt side of Storm's ack protocol, plus lineage.

Storm keeps, for every tuple delivered to a task, its *anchors* (root id ->
edge id, one entry per spout tree it belongs to) and an *ack value* (XOR of
the edge ids of the tuples emitted anchored to it). ``TupleTracker`` keeps the
same, keyed by the tuple id the bolt sees, and turns a bolt's ack/fail into
the messages the ``Acker`` consumes.

*Lineage* is a 64-bit digest naming a tuple's place in its spout tuple's
tree independent of random ids: (spout, msg_id, stream) for a spout tuple,
(parents' lineages, emitting component, emit ordinal, consumer, fan-out
ordinal) below it. A replayed spout tuple run through deterministic bolts
yields the same lineages, so a bolt executing a lineage it already executed
is a *duplicate*: Storm's at-least-once double count, counted.

Ids come from a seeded ``random.Random``: runs with the same seed and the
same injected clock are identical.
"""

from __future__ import annotations

import functools
import hashlib
import json
import random
import zlib
from collections.abc import Hashable, Iterable
from dataclasses import dataclass
from typing import Any

__all__ = ["InFlight", "TupleTracker", "child_lineage", "msg_key", "spout_lineage"]

_MASK64 = (1 << 64) - 1


@dataclass(slots=True)
class InFlight:
    """One delivered, not yet acked/failed tuple."""

    anchors: dict[int, int]
    lineage: int | None
    task: tuple[str, int]
    ack_val: int = 0


def _mix(value: int) -> int:
    """splitmix64's finaliser: a stable 64-bit scramble (never Python's salted hash)."""
    value = (value ^ (value >> 30)) * 0xBF58476D1CE4E5B9 & _MASK64
    value = (value ^ (value >> 27)) * 0x94D049BB133111EB & _MASK64
    return value ^ (value >> 31)


@functools.lru_cache(maxsize=4096)
def _salt(component: str, ordinal: int, consumer: str, fanout: int) -> int:
    return _mix(zlib.crc32(f"{component}|{ordinal}|{consumer}|{fanout}".encode()) | (ordinal << 32))


def msg_key(msg_id: Any) -> Hashable:
    """A hashable, stable stand-in for a JSON msg_id (lists and dicts become JSON text)."""
    if isinstance(msg_id, (list, dict, set)):
        return json.dumps(msg_id, sort_keys=True, default=repr)
    return msg_id  # type: ignore[no-any-return]


def spout_lineage(spout: str, stream: str, msg_key: Hashable) -> int:
    """Lineage of a reliable spout tuple (same for every replay of the msg_id).

    ``msg_key`` is the msg_id made hashable (JSON text for lists/dicts); its
    ``repr`` is stable across runs for the JSON-like values msg_ids are.
    """
    text = f"spout|{spout}|{stream}|{type(msg_key).__name__}:{msg_key!r}"
    return int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "big")


def child_lineage(
    parents: Iterable[int], component: str, ordinal: int, consumer: str, fanout: int
) -> int:
    """Lineage of the ``ordinal``-th emit of ``component`` anchored to ``parents``.

    Parents combine order-independently (sum), then mix with a salt of the
    emit's position; integer-only because it runs for every delivery.
    """
    return _mix((sum(parents) + _salt(component, ordinal, consumer, fanout)) & _MASK64)


class TupleTracker:
    """Delivered tuples by id; ids, edges and roots drawn from one seeded RNG."""

    def __init__(self, seed: int = 0) -> None:
        self._rng = random.Random(seed)
        self._inflight: dict[str, InFlight] = {}

    def __len__(self) -> int:
        return len(self._inflight)

    def new_id(self) -> int:
        """A fresh non-zero 64-bit id (edge, root or tuple id)."""
        while True:
            value = self._rng.getrandbits(64) & _MASK64
            if value:
                return value

    def new_tuple_id(self) -> str:
        """The id a bolt sees in ``tup.id``: a random long as a string, as Storm's ShellBolt sends."""
        return str(self.new_id())

    def get(self, tuple_id: str) -> InFlight | None:
        return self._inflight.get(tuple_id)

    def register(
        self, tuple_id: str, anchors: dict[int, int], lineage: int | None, task: tuple[str, int]
    ) -> None:
        """Record a delivery (only tuples that belong to at least one tree are tracked)."""
        if anchors:
            self._inflight[tuple_id] = InFlight(anchors, lineage, task)

    def anchor(self, anchor_ids: Iterable[str]) -> dict[int, int]:
        """Anchors of one new delivery emitted anchored to ``anchor_ids``.

        As Storm's BoltOutputCollector: one new edge per anchoring input that
        belongs to a tree, XORed into that input's ack value and under each
        of its roots. Unknown ids (unanchored, already acked, ticks) add nothing.
        """
        result: dict[int, int] = {}
        for anchor_id in anchor_ids:
            parent = self._inflight.get(anchor_id)
            if parent is None:
                continue
            edge = self.new_id()
            parent.ack_val ^= edge
            for root in parent.anchors:
                result[root] = result.get(root, 0) ^ edge
        return result

    def executed_again(self, tuple_id: str, executed: set[int]) -> bool:
        """Whether a bolt whose executed lineages are ``executed`` has executed this tuple's
        lineage before (a duplicate); records it otherwise."""
        entry = self._inflight.get(tuple_id)
        if entry is None or entry.lineage is None:
            return False
        if entry.lineage in executed:
            return True
        executed.add(entry.lineage)
        return False

    def lineages(self, anchor_ids: Iterable[str]) -> list[int]:
        found = (self._inflight.get(a) for a in anchor_ids)
        return [p.lineage for p in found if p is not None and p.lineage is not None]

    def ack(self, tuple_id: str) -> list[tuple[int, int]]:
        """A bolt acked ``tuple_id``: the (root, xor) acks to send (empty if unknown)."""
        entry = self._inflight.pop(tuple_id, None)
        if entry is None:
            return []
        return [(root, edge ^ entry.ack_val) for root, edge in entry.anchors.items()]

    def fail(self, tuple_id: str) -> list[int]:
        """A bolt failed ``tuple_id``: the roots to fail (empty if unknown)."""
        entry = self._inflight.pop(tuple_id, None)
        return list(entry.anchors) if entry is not None else []

    def drop_task(self, component: str, task_index: int) -> int:
        """Forget every tuple held by a crashed task (their trees will time out)."""
        lost = [t for t, e in self._inflight.items() if e.task == (component, task_index)]
        for tuple_id in lost:
            del self._inflight[tuple_id]
        return len(lost)
