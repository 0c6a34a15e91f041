"""Step 4 of a bolt task's batch: what its instance's state changed, as a version to store.

A ``Snapshotter`` rides on one live instance (``instance._stormshift_snap``) and turns
its state (``attributes.state_of``) into the payload of one version: a *base* (every
attribute; keyed objects as ``KeyedParts`` of packed entries) or, most batches, a
*delta* on the version the instance was built from or last wrote (``deltas.py``: the
keys of each tracked dict, the entries of each keyed object, attributes whose pickle
changed written whole). Dict-like attributes are swapped for change-tracking ones
(``state/tracked.py``) after a build and after each version lands (for attributes made
later), except a small plain ``dict`` of plain scalar values (at most ``SHADOW_MAX``
keys): it stays an exact ``dict`` (the interpreter's fast paths for every read and write
of the bolt's hot path, issue 34) and its keys are found by comparing it with a copy
taken when its version landed (``shadow_delta``: a pass over at most ``SHADOW_MAX`` keys
per batch instead of bookkeeping per write); one that outgrows that is tracked from the
next version on. A keyed object's entries are packed once when they change and kept, so a new
base reuses the bytes of every entry no batch touched since instead of pickling every
window again. Where the bytes go (Redis, fenced) is the engine's business.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from itertools import compress
from operator import is_not
from typing import Any, cast

from stormshift.state.component import deltas as D
from stormshift.state.component.attributes import candidates, may_be_state, state_of
from stormshift.state.component.pickler import dumps, pack_all, picklable
from stormshift.state.keyed import KeyedParts, is_keyed
from stormshift.state.tracked import TRACKABLE, track

__all__ = ["SHADOW_MAX", "Snapshotter", "held", "landed", "rest_of", "shadow_delta",
           "snapshot", "state_and_rest"]

SHADOW_MAX = 4096  # a plain dict up to this many keys is diffed per batch, not tracked
_PLAIN = frozenset({int, float, str, bytes, bool, type(None)})  # values a copy keeps whole


def _shadowable(value: Any) -> bool:
    """A plain dict small enough to diff per batch, whose values cannot change in place."""
    if type(value) is not dict or len(value) > SHADOW_MAX:
        return False
    plain = _PLAIN
    for v in value.values():
        if type(v) not in plain:
            return False
    return True


def shadow_delta(old: dict[Any, Any], new: dict[Any, Any]) -> D.KeyDelta | None:
    """What ``D.attr_delta`` gives for a tracked dict, for a plain dict ``new`` against its
    copy ``old`` as of the version: the keys deleted, the keys inserted (in order, at the
    end) and the values of the keys inserted or rebound (``is not``: a rebound equal value
    counts, as a tracked write does). None: nothing changed. Raises ``LookupError`` when a
    key kept its place in neither (deleted and inserted again, so moved to the end): then
    it is written whole, as a tracked dict is when reordered."""
    # The passes run in C where they can (keys views, map, compress): this runs per batch
    # over every key of the dict, the adclicks bolts' dicts included (the stage's count).
    kept = list(old) if old.keys() <= new.keys() else [k for k in old if k in new]
    live = list(new)
    n = len(kept)
    if live[:n] != kept:
        raise LookupError("reordered")
    deleted = [k for k in old if k not in new] if n < len(old) else []
    inserted = live[n:]
    values = {k: new[k] for k in inserted}
    if n == len(old):  # nothing deleted: both dicts' first n values are the kept keys'
        changed: Any = compress(kept, map(is_not, old.values(), new.values()))
    else:
        changed = [k for k in kept if old[k] is not new[k]]
    for k in changed:
        values[k] = new[k]
    if not (deleted or values):
        return None
    return deleted, inserted, values


def rest_of(state: dict[str, Any], tracked: dict[str, Any]) -> dict[str, Any]:
    """What a version pickles whole: neither a tracked dict (its keys go as they change) nor
    a keyed object (its entries do)."""
    return {n: v for n, v in state.items() if tracked.get(n) is not v and not is_keyed(v)}


def state_and_rest(instance: Any, tracked: dict[str, Any]) -> tuple[dict[str, Any], bytes]:
    """``state_of`` and the pickle of its ``rest_of``, pickling the untracked attributes
    once: when they pickle together each one pickles, so none needs a try of its own (a
    large untracked attribute was pickled twice)."""
    found = candidates(instance)
    try:
        rest = dumps(rest_of(found, tracked))
    except Exception:  # noqa: BLE001 - one is not state: find it as state_of does
        state = state_of(instance, tracked)
        return state, dumps(rest_of(state, tracked))
    return found, rest


def snapshot(instance: Any, txid: int) -> tuple[bytes, str, int]:
    """``(payload, kind, prev)`` of ``instance``'s state as version ``txid`` (a ``base``,
    or a ``delta`` on version ``prev``); the instance was made ready by ``build``."""
    return instance._stormshift_snap.payload(instance, txid)  # type: ignore[no-any-return]


def landed(instance: Any, txid: int, head: bytes = b"") -> None:
    """Version ``txid`` of ``instance`` was stored (``head``: what identifies it in the
    store): the next ``snapshot`` is a delta on it."""
    instance._stormshift_snap.written(instance, txid, head)


def held(instance: Any) -> tuple[int, bytes] | None:
    """``(version, head)`` of the state a built instance holds (version -1: none stored;
    head ``b""`` unless the instance wrote that version itself); None if never built."""
    snap = getattr(instance, "_stormshift_snap", None)
    return None if snap is None else (snap.version, snap.head)


class Snapshotter:
    """What one task's batches write of its instance's state (module doc, step 4).

    ``version`` is the txid of the stored version the instance's state equals (-1: none:
    the next write is a base); ``deltas``, ``delta_bytes`` and ``base_bytes`` describe its
    chain (``deltas.should_compact``). Call order per batch: ``payload`` (before the
    commit), then ``written`` once the commit landed (an instance whose commit failed is
    dropped, never reused)."""

    def __init__(self, version: int = -1, deltas: int = 0, base_bytes: int = 0,
                 delta_bytes: int = 0):
        self.version, self.deltas = version, deltas
        self.base_bytes, self.delta_bytes = base_bytes, delta_bytes
        self.tracked: dict[str, Any] = {}  # attribute -> the tracked object put there
        # attribute -> a copy of its plain dict as of ``version`` (those in ``tracked``
        # left plain: module doc)
        self.shadow: dict[str, dict[Any, Any]] = {}
        # those whose values written since (``payload``'s diff) are all plain scalars: the
        # rest of their values are the copy's, so ``settle`` need not look at every value
        self._plain_writes: set[str] = set()
        self.names: tuple[str, ...] = ()  # state attributes as of ``version``
        self.rest: bytes | None = None  # pickle of the untracked attributes as of ``version``
        self.keyed: dict[str, Any] = {}  # attribute -> the keyed state object as of ``version``
        # attribute -> its keyed object's entries, packed, as of ``version`` (module doc)
        self.packed: dict[str, dict[Hashable, bytes]] = {}
        self._packed_now: dict[str, dict[Hashable, bytes]] = {}
        self._packed_changes: dict[str, tuple[list[Hashable], dict[Hashable, bytes]]] = {}
        self.head = b""  # what identifies version ``version`` in Redis (``written_head``)
        self._pending: tuple[str, int, bytes, tuple[str, ...]] | None = None
        self._keyed_now: dict[str, Any] = {}

    def adopt(self, instance: Any, known: frozenset[str] = frozenset()) -> bool:
        """Swap plain dict-like attributes for tracked ones; True if any was. Left as they
        are: one shared with another attribute (swapping one would split them) and one
        that cannot be pickled (not state). ``known``: names known to pickle."""
        attrs = vars(instance)
        user = {n: v for n, v in attrs.items() if may_be_state(n)}
        todo = sorted(n for n, v in user.items()
                      if type(v) in TRACKABLE and self.tracked.get(n) is not v)
        if not todo:
            return False
        ids: dict[int, int] = {}
        for value in user.values():
            ids[id(value)] = ids.get(id(value), 0) + 1
        for name in todo:
            value = user[name]
            if ids[id(value)] == 1 and (name in known or picklable(value)):
                if _shadowable(value):
                    self.tracked[name] = value
                    self.shadow[name] = value.copy()
                else:
                    attrs[name] = self.tracked[name] = track(value)
        return True

    def settle(self, instance: Any) -> None:
        """The instance's state is the version's now (it landed, or a catch-up folded it):
        tracked dicts forget their changes, plain ones get a new copy; attributes replaced,
        and plain dicts no longer small or no longer of scalars, are no longer followed
        here: the ``adopt`` that follows (both callers) tracks them from now on, with its
        checks (shared with another attribute, picklable)."""
        attrs = vars(instance)
        shadow, plain_writes = self.shadow, self._plain_writes
        for name, value in list(self.tracked.items()):
            if attrs.get(name) is not value:
                del self.tracked[name]
                shadow.pop(name, None)
            elif name not in shadow:
                value._ch.reset()
            elif (len(value) <= SHADOW_MAX if name in plain_writes else _shadowable(value)):
                shadow[name] = value.copy()
            else:
                del shadow[name], self.tracked[name]
        self._plain_writes = set()

    def rest_pickle(self, state: dict[str, Any]) -> bytes:
        return dumps(rest_of(state, self.tracked))

    def _parts(self, name: str, value: Any) -> KeyedParts:
        """Keyed object ``name`` whole, packed: the kept entries of ``version`` with this
        batch's changes (``keyed_delta``) packed, or, with none kept, every entry packed."""
        cache = self.packed.get(name)
        same = self.keyed.get(name) is value  # (not narrowing ``value`` to an Optional)
        if cache is not None and same:
            shared, deleted, values = value.keyed_delta()
            entries = dict(cache)
            for k in deleted:
                entries.pop(k, None)
            entries.update(pack_all(values))
        else:
            shared, objects = value.keyed_parts()
            entries = pack_all(objects)
        self._packed_now[name] = entries
        return KeyedParts(type(value), shared, entries, packed=True)

    def payload(self, instance: Any, txid: int) -> tuple[bytes, str, int]:
        """``(payload, kind, prev)`` of the version ``txid`` (kind ``base`` or ``delta``)."""
        state, rest = state_and_rest(instance, self.tracked)
        names = tuple(state)
        self._packed_now, self._packed_changes = {}, {}
        self._plain_writes = set()
        if self.version < 0 or D.should_compact(self.deltas, self.delta_bytes, self.base_bytes):
            payload = dumps({n: self._parts(n, v) if is_keyed(v) else v
                                         for n, v in state.items()})
            self._keyed_now = {n: v for n, v in state.items() if is_keyed(v)}
            self._pending = ("base", len(payload), rest, names)
            return payload, "base", -1
        keys: dict[str, Any] = {}
        whole: dict[str, Any] = {}
        keyed: dict[str, Any] = {}
        for name, value in state.items():
            if is_keyed(value):  # its changed entries, or whole (as parts) when new
                same = self.keyed.get(name) is value
                if same:
                    shared, deleted, values = value.keyed_delta()
                    packed = pack_all(values)
                    keyed[name] = (shared, deleted, packed)
                    self._packed_changes[name] = (deleted, packed)
                else:
                    whole[name] = self._parts(name, value)
                continue
            if name not in self.tracked or self.tracked[name] is not value:
                continue  # not a tracked dict (``tracked.get`` is None for a None attribute)
            if name not in self.names:  # new since the version: no keys to build on
                whole[name] = value
                continue
            try:
                old = self.shadow.get(name)
                kd = D.attr_delta(value) if old is None else shadow_delta(old, cast(dict, value))
            except LookupError:  # cleared or reordered to the front: written whole
                whole[name] = value
                continue
            if old is not None and (kd is None or _PLAIN.issuperset(map(type, kd[2].values()))):
                self._plain_writes.add(name)
            if kd is not None:
                keys[name] = kd
        self._keyed_now = {n: v for n, v in state.items() if is_keyed(v)}
        if rest != self.rest:
            whole.update({n: v for n, v in state.items()
                          if self.tracked.get(n) is not v and not is_keyed(v)})
        dropped = [n for n in self.names if n not in state]
        try:
            payload = dumps(D.make_delta(keys, whole, dropped, keyed, True))
        except Exception:  # noqa: BLE001 - a value that cannot be pickled: not state
            for name in [n for n in keys if not picklable(keys[n])]:
                del self.tracked[name]  # from now on tried whole, like any attribute
                self.shadow.pop(name, None)
            return self.payload(instance, txid)
        self._pending = ("delta", len(payload), rest, names)
        return payload, "delta", self.version

    def written(self, instance: Any, txid: int, head: bytes = b"") -> None:
        """The version ``txid`` landed (``head``: its stored head): its changes are no longer
        pending; dict-like attributes made since are tracked from now on."""
        self.head = head
        kind, size, rest, names = self._pending  # type: ignore[misc]
        if kind == "base":
            self.deltas, self.delta_bytes, self.base_bytes = 0, 0, size
        else:
            self.deltas, self.delta_bytes = self.deltas + 1, self.delta_bytes + size
        self.version, self.rest, self.names, self._pending = txid, rest, names, None
        self.keyed = self._keyed_now
        for value in self.keyed.values():
            value.keyed_mark()
        self._keep_packed(self._packed_now, self._packed_changes)
        self._packed_now, self._packed_changes = {}, {}
        self.settle(instance)
        if self.adopt(instance):
            self.rest = self.rest_pickle(state_of(instance, self.tracked))

    def _keep_packed(self, whole: Mapping[str, dict[Hashable, bytes]],
                     changes: Mapping[str, tuple[list[Hashable], dict[Hashable, bytes]]]) -> None:
        """The packed entries of the version just reached: ``whole`` replaces a keyed
        object's, ``changes`` (deleted, set) update the ones kept, others stay as they are;
        a keyed object with none kept gets them when the next base packs it whole."""
        kept: dict[str, dict[Hashable, bytes]] = {}
        for name in self.keyed:
            if name in whole:
                kept[name] = whole[name]
            elif name in self.packed:
                entries = kept[name] = self.packed[name]
                deleted, values = changes.get(name, ((), {}))
                for k in deleted:
                    entries.pop(k, None)
                entries.update(values)
        self.packed = kept

    def follow_packed(self, deltas: list[dict[str, Any]]) -> None:
        """The packed entries kept follow ``deltas`` (a catch-up folded them into the live
        instance): what a delta holds whole replaces them, its keyed changes update them."""
        for delta in deltas:
            whole = {n: v.entries for n, v in delta["whole"].items()
                     if isinstance(v, KeyedParts) and v.packed}
            gone = set(delta["whole"]) | set(delta["drop"])
            keyed = delta.get("keyed", {})
            changes = {n: (list(kd[1]), dict(kd[2])) for n, kd in keyed.items()
                       if delta.get("keyed_packed", False)}
            self.packed = {n: e for n, e in self.packed.items()
                           if n not in gone and (n in changes or n not in keyed)}
            self._keep_packed(whole, changes)
