"""Build a hosted instance's state from a stored version, or bring a live one up to it.

The other half of bytewax's ``snapshot()`` / ``build(resume_state)``: the resume state
is a ``RestorePoint`` (a base and the deltas after it, verified bytes: the store
checks their HMAC before anything here unpickles them). ``build`` sets its attributes
on a freshly initialized instance (``initialize()`` re-made what is not state);
``catch_up`` folds only the deltas after the version a live instance already holds
into it (a worker that ran the task a few batches ago reads what changed since, not
the whole state); ``state_at`` is the state a point folds to, for readers that build
no instance (final state, rescale, upgrade). All three fold as ``deltas.fold`` does,
so each gives the state the others give.
"""

from __future__ import annotations

import pickle
from dataclasses import dataclass
from typing import Any

from stormshift.state.component import deltas as D
from stormshift.state.component.snapshotter import Snapshotter, state_and_rest
from stormshift.state.keyed import KeyedParts, is_keyed, to_live

__all__ = ["RestorePoint", "build", "catch_up", "state_at"]


@dataclass(frozen=True)
class RestorePoint:
    """Verified payloads of one restore point: ``base`` then ``deltas`` oldest first;
    ``version`` is the txid of the newest (the state they fold to is the state at it);
    ``base`` is empty when the point only continues a version the caller holds
    (``catch_up``)."""

    version: int
    base: bytes
    deltas: tuple[bytes, ...] = ()

    @property
    def delta_bytes(self) -> int:
        return sum(len(d) for d in self.deltas)


def state_at(point: RestorePoint | None) -> dict[str, Any]:
    """The attributes a point folds to, by name ({} for no point)."""
    return D.fold_payloads(point.base, point.deltas) if point is not None else {}


def build(instance: Any, point: RestorePoint | None) -> None:
    """Set the attributes of ``point`` on a freshly initialized instance (None: nothing
    stored, a first run), and give it a ``Snapshotter`` that continues the point's chain."""
    if point is None:
        snap = instance._stormshift_snap = Snapshotter()
        snap.adopt(instance)
        return
    parts = D.fold_parts(pickle.loads(point.base), [pickle.loads(d) for d in point.deltas])
    packed = {n: v.entries for n, v in parts.items() if isinstance(v, KeyedParts) and v.packed}
    folded = to_live(parts)
    for name, value in folded.items():
        setattr(instance, name, value)
    snap = instance._stormshift_snap = Snapshotter(point.version, len(point.deltas),
                                                   len(point.base), point.delta_bytes)
    snap.adopt(instance, known=frozenset(folded))
    state, rest = state_and_rest(instance, snap.tracked)
    # Attributes initialize() made that the restore point lacks are new: written whole.
    snap.names, snap.rest = tuple(n for n in state if n in folded), rest
    snap.keyed = {n: v for n, v in folded.items() if is_keyed(v)}
    snap.packed = {n: e for n, e in packed.items() if n in snap.keyed}


def catch_up(instance: Any, point: RestorePoint) -> bool:
    """Bring a live instance holding version ``snap.version`` to ``point.version`` by
    folding ``point.deltas`` into its own attributes (module doc): a tracked
    dict takes the changed keys in place, a keyed object its entries (``keyed_apply``);
    what a delta holds whole replaces the attribute. The result is the state a restore of
    ``point`` gives (``deltas.fold_live`` folds as ``deltas.fold``). False, with nothing
    changed, when a keyed object cannot take a delta in place."""
    snap: Snapshotter = instance._stormshift_snap
    current = {name: getattr(instance, name) for name in snap.names}
    deltas = [pickle.loads(d) for d in point.deltas]
    folded = D.fold_live(current, deltas)
    if folded is None:
        return False
    attrs = vars(instance)
    for name in snap.names:
        if name not in folded:
            attrs.pop(name, None)
    for name, value in folded.items():
        if attrs.get(name) is not value:
            attrs[name] = value
    snap.settle(instance)  # the fold's own changes are not the next batch's
    snap.version = point.version
    snap.deltas += len(point.deltas)
    snap.delta_bytes += point.delta_bytes
    snap.head = b""  # the chain's head is not this instance's write
    snap.adopt(instance, known=frozenset(folded))
    state, snap.rest = state_and_rest(instance, snap.tracked)
    snap.names = tuple(n for n in state if n in folded)
    snap.keyed = {n: v for n, v in folded.items() if is_keyed(v)}
    for value in snap.keyed.values():
        value.keyed_mark()
    snap.follow_packed(deltas)
    return True
