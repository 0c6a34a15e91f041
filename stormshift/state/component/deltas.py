"""Snapshot deltas of a legacy bolt task: what one batch changed, and how versions fold.

A task's snapshot is a chain of versions (``state/snapshots.py``): a *base*
(every state attribute, pickled whole) and *deltas*, each naming the version it
was built on (``prev``). A delta holds, per tracked dict attribute
(``state/tracked.py``), the keys the batch deleted, the keys it inserted (in
order: folding appends them, so iteration order comes back as it was) and the
values of every inserted or changed key; attributes written whole (new,
replaced, not dict-like, or cleared); per keyed state object (``state/keyed.py``:
a windowed bolt's windows) its shared part, the entries the batch deleted and the
entries it changed (packed, each its own pickle: ``keyed_packed``, ``state/keyed.py``);
attributes that are gone. Restore =
base folded with its deltas in txid order; the fold is a pure function of the
versions, so a replayed batch (same txid, same delta) restores the same state.
Payloads are pickled; ``fold_payloads`` is only ever given bytes whose HMAC
``SnapshotStore`` verified.
"""

from __future__ import annotations

import pickle
from collections.abc import Mapping, Sequence
from typing import Any

from stormshift.errors import StateFormatError
from stormshift.state.keyed import KeyedParts, apply_keyed, to_live, unpack
from stormshift.state.tracked import changes_of

__all__ = ["COMPACT_MAX_DELTAS", "COMPACT_RATIO", "attr_delta", "fold", "fold_live",
           "fold_parts", "fold_payloads", "make_delta", "should_compact"]

DELTA_FORMAT = 3  # 2: a "keyed" section; 3: its entries may be packed (older ones are read)
READS = (1, 2, 3)
COMPACT_RATIO = 0.5  # a new base once the deltas since the last one reach this share of it
COMPACT_MAX_DELTAS = 512  # ... or this many deltas (bounds a restore's fold and the hash)
KeyDelta = tuple[list[Any], list[Any], dict[Any, Any]]  # (deleted, inserted, values)
KeyedDelta = tuple[Any, list[Any], dict[Any, Any]]  # (shared, deleted, values): keyed.py


def attr_delta(value: Any) -> KeyDelta | None:
    """The keys a tracked dict changed since its last snapshot (None: nothing), or raises
    ``LookupError`` when it must be written whole (cleared, reordered to the front)."""
    ch = changes_of(value)
    if ch.whole:
        raise LookupError("whole")
    has = dict.__contains__
    get = dict.__getitem__
    deleted = [k for k in ch.deleted if not has(value, k)]
    inserted = list(ch.inserted)
    changed = [k for k in ch.updated if k not in ch.inserted]
    changed += [k for k in ch.volatile if k not in ch.inserted and k not in ch.updated]
    if not (deleted or inserted or changed):
        return None
    values = {k: get(value, k) for k in inserted}
    for k in changed:
        if has(value, k):
            values[k] = get(value, k)
    return deleted, inserted, values


def make_delta(keys: Mapping[str, KeyDelta], whole: Mapping[str, Any],
               dropped: Sequence[str], keyed: Mapping[str, KeyedDelta] | None = None,
               keyed_packed: bool = False) -> dict[str, Any]:
    """One batch's delta as plain data (sorted by attribute name); ``keyed_packed``: the
    keyed sections' entries are pickles (``state/keyed.py``)."""
    return {"format": DELTA_FORMAT, "keys": dict(sorted(keys.items())),
            "whole": dict(sorted(whole.items())), "drop": sorted(dropped),
            "keyed": dict(sorted((keyed or {}).items())), "keyed_packed": keyed_packed}


def _apply_keys(target: Any, delta: KeyDelta) -> None:
    deleted, inserted, values = delta
    for k in deleted:
        target.pop(k, None)
    for k in inserted:  # re-inserted keys move to the end, as in the live dict
        target.pop(k, None)
    for k, v in values.items():
        target[k] = v


def _fold_one(state: dict[str, Any], delta: Mapping[str, Any], in_place: bool = False) -> None:
    """One delta folded into ``state``; ``in_place``: a live keyed object takes its entries
    itself (``keyed_apply``) instead of being turned into parts."""
    for name in delta["drop"]:
        state.pop(name, None)
    state.update(delta["whole"])
    for name, kd in delta["keys"].items():
        _apply_keys(state[name], kd)
    packed = delta.get("keyed_packed", False)
    for name, kd in delta.get("keyed", {}).items():
        target = state[name]
        if in_place and not isinstance(target, KeyedParts):
            shared, deleted, values = kd
            target.keyed_apply(shared, deleted, unpack(values) if packed else values)
        else:
            state[name] = apply_keyed(target, kd, packed)


def fold_parts(base: Mapping[str, Any], deltas: Sequence[Mapping[str, Any]]
               ) -> dict[str, Any]:
    """``fold`` with keyed state objects left as their ``KeyedParts`` (a task keeps the
    packed entries: ``taskstate.restore``)."""
    state = dict(base)
    for delta in deltas:
        if delta.get("format") not in READS:
            raise StateFormatError(f"snapshot delta format {delta.get('format')!r}, this stormshift "
                                   f"reads {READS}")
        _fold_one(state, delta)
    return state


def fold(base: Mapping[str, Any], deltas: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The state after ``deltas`` (oldest first) on ``base``: attributes by name, keyed
    state objects built back from their parts."""
    return to_live(fold_parts(base, deltas))


def fold_live(current: Mapping[str, Any], deltas: Sequence[Mapping[str, Any]]
              ) -> dict[str, Any] | None:
    """``fold`` onto a live instance's attributes (``current``, as of the version the
    deltas build on): tracked dicts change in place, keyed objects take their entries in
    place (``keyed_apply``). None, with nothing changed, if a delta holds entries for a
    live keyed object without ``keyed_apply``: the caller restores whole instead."""
    replaced: set[str] = set()
    for delta in deltas:
        if delta.get("format") not in READS:
            return None
        for name in delta.get("keyed", {}):
            if name not in replaced and not callable(getattr(type(current.get(name)),
                                                             "keyed_apply", None)):
                return None
        replaced |= set(delta["whole"]) | set(delta["drop"])
    state = dict(current)
    for delta in deltas:
        _fold_one(state, delta, in_place=True)
    return to_live(state)


def fold_payloads(base: bytes, deltas: Sequence[bytes]) -> dict[str, Any]:
    """``fold`` of verified pickled payloads (``SnapshotStore.load`` gives them)."""
    return fold(pickle.loads(base), [pickle.loads(d) for d in deltas])


def should_compact(deltas: int, delta_bytes: int, base_bytes: int, *,
                   ratio: float = COMPACT_RATIO, max_deltas: int = COMPACT_MAX_DELTAS) -> bool:
    """Write a base instead of a delta? Once the chain's deltas weigh ``ratio`` of the
    base or number ``max_deltas``: the cost of a base is then paid for by the deltas it
    replaces, and a restore folds a bounded chain."""
    return deltas >= max_deltas or delta_bytes >= ratio * max(base_bytes, 1)
