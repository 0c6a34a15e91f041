"""Keyed state objects: a bolt attribute stored as one small shared part and per-key entries.

A windowed bolt keeps its windows in one attribute (``WindowedBolt.windowing_state``),
not a dict, yet most of it is per key: each key's windows, timers and what its panes
emitted. An attribute whose value follows the ``KeyedState`` protocol below is stored
that way in a task's snapshot chain (``state/component/deltas.py``): a base holds
``KeyedParts(cls, shared, entries)``; a delta holds the shared part and only the
entries a batch changed or deleted, so a batch writes what it touched, not the
number of open windows, and a rescale (``state/rescale.py``) sends each entry to the
task the fields grouping routes its key to.

Protocol, in call order:

- ``keyed_parts()`` -> ``(shared, {entry id: entry})``: everything (a base, a rescale);
- ``keyed_delta()`` -> ``(shared, deleted ids, {entry id: entry})``: what changed since
  the last ``keyed_mark()`` (or since the object was built), ids sorted;
- ``keyed_mark()``: the version holding those changes landed;
- ``cls.from_keyed(shared, entries)``: the object again (restore; entries in any order);
- ``cls.keyed_key(entry)``: the grouping value(s) of an entry's key (rescale routing);
- ``cls.keyed_merge(shareds, task, par)``: the shared part of new task ``task`` of
  ``par`` from the old tasks' shared parts, deterministically (rescale);
- optional, ``keyed_apply(shared, deleted ids, {entry id: entry})``: one delta applied in
  place (a live instance catching up: ``deltas.fold_live``); without it a catch-up that
  meets such a delta restores the whole state instead.

*Packed* entries: the engine's ``Snapshotter`` stores each entry as its own pickle,
made once when the entry changed (``KeyedParts.packed``; a delta's keyed section likewise,
``state/component/deltas.py``), so a new base reuses the bytes of every entry no batch touched
since, instead of pickling the whole state again; they are unpickled when the object is
built (``unpack``: bytes a verified payload held, never bytes from elsewhere).

In bytewax's words (``state/component``): ``keyed_parts`` is ``snapshot()``,
``from_keyed`` is ``build(resume_state)``, ``keyed_delta`` / ``keyed_mark`` the delta
between two snapshots, ``keyed_apply`` a catch-up; ``keyed_key`` / ``keyed_merge`` are
what a snapshot needs on top to be re-split over another par.

No Redis; ``state/component`` (its ``Snapshotter``, ``deltas.fold``) uses it. Stored
bases pickle ``KeyedParts`` by reference: this module's path is part of the stored
format (moving it would make every stored windowed state unreadable).
"""

from __future__ import annotations

import pickle
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

__all__ = ["KeyedParts", "KeyedState", "apply_keyed", "is_keyed", "stored", "to_live", "unpack"]


@runtime_checkable
class KeyedState(Protocol):
    def keyed_parts(self) -> tuple[Any, dict[Hashable, Any]]: ...

    def keyed_delta(self) -> tuple[Any, list[Hashable], dict[Hashable, Any]]: ...

    def keyed_mark(self) -> None: ...

    @classmethod
    def from_keyed(cls, shared: Any, entries: Mapping[Hashable, Any]) -> Any: ...

    @classmethod
    def keyed_key(cls, entry: Any) -> Any: ...

    @classmethod
    def keyed_merge(cls, shareds: Sequence[Any], task: int, par: int) -> Any: ...


_METHODS = ("keyed_parts", "keyed_delta", "keyed_mark", "from_keyed", "keyed_key",
            "keyed_merge")


def is_keyed(value: Any) -> bool:
    """Whether ``value`` follows the protocol (asked of its type: a user's proxy object
    answering every attribute is not taken for one)."""
    cls = type(value)
    return cls is not type and all(callable(getattr(cls, m, None)) for m in _METHODS)


def unpack(entries: Mapping[Hashable, bytes]) -> dict[Hashable, Any]:
    """Packed entries (module doc) as the objects they were."""
    loads = pickle.loads
    return {k: loads(v) for k, v in entries.items()}


@dataclass
class KeyedParts:
    """A keyed state object as stored (bases, folds): its class and its parts; ``packed``:
    the entries are pickles (module doc). A part stored before ``packed`` existed reads
    the class default, False."""

    cls: type
    shared: Any
    entries: dict[Hashable, Any] = field(default_factory=dict)
    packed: bool = False

    @classmethod
    def of(cls, value: Any) -> KeyedParts:
        shared, entries = value.keyed_parts()
        return cls(type(value), shared, dict(entries))

    def objects(self) -> dict[Hashable, Any]:
        """The entries as objects (unpacked when packed)."""
        return unpack(self.entries) if self.packed else self.entries

    def build(self) -> Any:
        return self.cls.from_keyed(self.shared, self.objects())  # type: ignore[attr-defined]


def stored(state: Mapping[str, Any]) -> dict[str, Any]:
    """``state`` (attributes by name) with keyed objects as ``KeyedParts`` (a base)."""
    return {n: KeyedParts.of(v) if is_keyed(v) else v for n, v in state.items()}


def apply_keyed(target: Any, delta: tuple[Any, Sequence[Hashable], Mapping[Hashable, Any]],
                packed: bool = False) -> KeyedParts:
    """One delta's keyed section applied to ``target`` (parts, or a live object stored
    whole by an older version): the new shared part, entries deleted, entries set.
    ``packed``: the delta's entries are pickles; the parts stay packed while the base and
    every delta are (a mix is unpacked: older versions wrote objects)."""
    parts = target if isinstance(target, KeyedParts) else KeyedParts.of(target)
    shared, deleted, values = delta
    if parts.packed != packed:
        if parts.packed:
            parts.entries, parts.packed = unpack(parts.entries), False
        else:
            values = unpack(values)
    parts.shared = shared
    for k in deleted:
        parts.entries.pop(k, None)
    parts.entries.update(values)
    return parts


def to_live(state: dict[str, Any]) -> dict[str, Any]:
    """A folded state's ``KeyedParts`` built back into their objects."""
    return {n: v.build() if isinstance(v, KeyedParts) else v for n, v in state.items()}
