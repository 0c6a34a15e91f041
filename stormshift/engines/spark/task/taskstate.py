"""Exactly-once state of a hosted bolt: restore as of txid-1, snapshot at txid.

A bolt task for batch *N* is a pure function of (its state committed at
*N-1*, its input of *N*). The state of an unchanged streamparse bolt is its
instance attributes (a word-count bolt's ``Counter``). For batch *N* a task:

1. takes a new epoch for (component, task) -- every older attempt is fenced;
2. reuses the live instance kept in this Python worker if it holds the
   state of a txid below *N* written under epoch *e-1* (no other attempt ran
   in between: the batches after it skipped the task as idle); or, when it holds an older version *v* that it wrote itself
   (the head it wrote is still there) and the restore point below *N* is *v*
   plus deltas, applies those deltas to it (``catch_up``: Spark gives a task to
   whichever Python worker is idle, and a worker that ran the task a few
   batches ago reads what changed since, not the whole state); else builds a
   fresh instance, calls ``initialize()`` (so connections are re-made) and
   restores the attributes of the restore point below *N* (a base folded with
   its deltas: ``state/deltas.py``);
3. processes the batch;
4. snapshots its attributes at *N* under its epoch (a fenced write): the
   ``Snapshotter`` writes what the batch changed (a delta on the version the
   instance was restored from or last wrote) or, now and then, a new base.

Dict-like attributes are swapped for change-tracking ones (``state/tracked.py``)
after ``initialize()``, after a restore and after each snapshot (for attributes
made later); a keyed state object (``state/keyed.py``: a windowed bolt's windows)
writes its shared part and the entries it changed, each packed (its own pickle) once
and kept, so a new base reuses the bytes of the entries no batch touched since
(``Snapshotter.packed``) instead of pickling every window again; other attributes are pickled
together, and written when their pickle changed. Attributes pystorm itself owns (pipes, locks, logger, conf,
context) and values that cannot be pickled are not state: they come from
``initialize()``. A change of ``par`` re-splits dict state keyed by the
fields grouping, or is refused (``state/rescale.py``).
"""

from __future__ import annotations

import pickle
import types
from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass
from typing import Any

from pyspark import cloudpickle

from stormshift.adapters.attributes import FRAMEWORK_ATTRS
from stormshift.state import deltas as D
from stormshift.state.keyed import KeyedParts, is_keyed, to_live
from stormshift.state.tracked import TRACKABLE, track

__all__ = ["FRAMEWORK_ATTRS", "CachedTask", "Snapshotter", "TaskCache", "catch_up", "config_of",
           "restore", "state_of"]

_NOT_STATE = (types.FunctionType, types.MethodType, types.BuiltinFunctionType, types.ModuleType)


def state_of(instance: Any, tracked: dict[str, Any] | None = None) -> dict[str, Any]:
    """The picklable user attributes of ``instance`` (its state), by name, sorted; the
    ``tracked`` dicts of a ``Snapshotter`` count as picklable (their keys are pickled as
    they change, not tried whole every batch), and so do keyed objects (pickled by their
    entries); an unpicklable attribute is re-made by ``initialize()``."""
    tracked = tracked or {}
    return {name: value for name, value in _candidates(instance).items()
            if tracked.get(name) is value or is_keyed(value) or _picklable(value)}


def _candidates(instance: Any) -> dict[str, Any]:
    """The user attributes that may be state (not yet tried for pickling), sorted by name."""
    out: dict[str, Any] = {}
    attrs = vars(instance)
    for name in sorted(attrs):
        if name in FRAMEWORK_ATTRS or name.startswith("_stormshift"):
            continue
        value = attrs[name]
        if isinstance(value, _NOT_STATE) or callable(value) and not hasattr(value, "__dict__"):
            continue
        out[name] = value
    return out


def _rest(state: dict[str, Any], tracked: dict[str, Any]) -> dict[str, Any]:
    """What a version pickles whole: neither a tracked dict (its keys go as they change) nor
    a keyed object (its entries do)."""
    return {n: v for n, v in state.items() if tracked.get(n) is not v and not is_keyed(v)}


def _state_and_rest(instance: Any, tracked: dict[str, Any]) -> tuple[dict[str, Any], bytes]:
    """``state_of`` and the ``rest_pickle`` of it, pickling the untracked attributes once:
    when they pickle together each one pickles, so none needs a try of its own (a large
    untracked attribute was pickled twice)."""
    candidates = _candidates(instance)
    try:
        rest = cloudpickle.dumps(_rest(candidates, tracked))
    except Exception:  # noqa: BLE001 - one is not state: find it as state_of does
        state = state_of(instance, tracked)
        return state, cloudpickle.dumps(_rest(state, tracked))
    return candidates, rest


def _pack(entry: Any) -> bytes:
    """One keyed entry as stored (``state/keyed.py``: packed): the C pickler, which calls no
    Python per object (cloudpickle's does, twice: a quarter of a windowed batch's CPU);
    cloudpickle for what it cannot do by reference (a lambda, a class of ``__main__``)."""
    try:
        data = pickle.dumps(entry, protocol=pickle.HIGHEST_PROTOCOL)
    except Exception:  # noqa: BLE001 - not picklable by reference: by value
        return cloudpickle.dumps(entry)
    return cloudpickle.dumps(entry) if b"__main__" in data else data


def _pack_all(entries: Mapping[Hashable, Any]) -> dict[Hashable, bytes]:
    return {k: _pack(v) for k, v in entries.items()}


def _picklable(value: Any) -> bool:
    try:
        cloudpickle.dumps(value)
    except Exception:  # noqa: BLE001 - any pickling error means "not state"
        return False
    return True


def config_of(graph: Any, comp: Any) -> str:
    """What a live instance was initialized with: a run with other config or other wiring
    (a changed par: a rescaled task holds other keys) builds a new one."""
    return repr((sorted(graph.config.items()), sorted(comp.config.items()), comp.class_path,
                 graph.wiring()))


def restore(instance: Any, point: Any) -> None:
    """Set the attributes of a restore point (``SnapshotStore.load``) on a freshly
    initialized instance, and give it a ``Snapshotter`` that continues its chain."""
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
    state, rest = _state_and_rest(instance, snap.tracked)
    # Attributes initialize() made that the restore point lacks are new: written whole.
    snap.names, snap.rest = tuple(n for n in state if n in folded), rest
    snap.keyed = {n: v for n, v in folded.items() if is_keyed(v)}
    snap.packed = {n: e for n, e in packed.items() if n in snap.keyed}


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
        user = {n: v for n, v in attrs.items()
                if n not in FRAMEWORK_ATTRS and not n.startswith("_stormshift")}
        todo = sorted(n for n, v in user.items()
                      if type(v) in TRACKABLE and self.tracked.get(n) is not v)
        if not todo:
            return False
        ids: dict[int, int] = {}
        for value in user.values():
            ids[id(value)] = ids.get(id(value), 0) + 1
        for name in todo:
            value = user[name]
            if ids[id(value)] == 1 and (name in known or _picklable(value)):
                attrs[name] = self.tracked[name] = track(value)
        return True

    def rest_pickle(self, state: dict[str, Any]) -> bytes:
        return cloudpickle.dumps(_rest(state, self.tracked))

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
            entries.update(_pack_all(values))
        else:
            shared, objects = value.keyed_parts()
            entries = _pack_all(objects)
        self._packed_now[name] = entries
        return KeyedParts(type(value), shared, entries, packed=True)

    def payload(self, instance: Any, txid: int) -> tuple[bytes, str, int]:
        """``(payload, kind, prev)`` of the version ``txid`` (kind ``base`` or ``delta``)."""
        state, rest = _state_and_rest(instance, self.tracked)
        names = tuple(state)
        self._packed_now, self._packed_changes = {}, {}
        if self.version < 0 or D.should_compact(self.deltas, self.delta_bytes, self.base_bytes):
            payload = cloudpickle.dumps({n: self._parts(n, v) if is_keyed(v) else v
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
                    packed = _pack_all(values)
                    keyed[name] = (shared, deleted, packed)
                    self._packed_changes[name] = (deleted, packed)
                else:
                    whole[name] = self._parts(name, value)
                continue
            if self.tracked.get(name) is not value:
                continue
            if name not in self.names:  # new since the version: no keys to build on
                whole[name] = value
                continue
            try:
                kd = D.attr_delta(value)
            except LookupError:  # cleared or reordered to the front: written whole
                whole[name] = value
                continue
            if kd is not None:
                keys[name] = kd
        self._keyed_now = {n: v for n, v in state.items() if is_keyed(v)}
        if rest != self.rest:
            whole.update({n: v for n, v in state.items()
                          if self.tracked.get(n) is not v and not is_keyed(v)})
        dropped = [n for n in self.names if n not in state]
        try:
            payload = cloudpickle.dumps(D.make_delta(keys, whole, dropped, keyed, True))
        except Exception:  # noqa: BLE001 - a value that cannot be pickled: not state
            for name in [n for n in keys if not _picklable(keys[n])]:
                del self.tracked[name]  # from now on tried whole, like any attribute
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
        attrs = vars(instance)
        for name, value in list(self.tracked.items()):
            if attrs.get(name) is value:
                value._ch.reset()
            else:
                del self.tracked[name]
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


def catch_up(instance: Any, point: Any) -> bool:
    """Bring a live instance holding version ``snap.version`` to ``point.version`` by
    folding ``point.deltas`` into its own attributes (step 2 of the module doc): a tracked
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
    for name, value in list(snap.tracked.items()):  # the fold's own changes are not the next batch's
        if attrs.get(name) is value:
            value._ch.reset()
        else:
            del snap.tracked[name]
    snap.version = point.version
    snap.deltas += len(point.deltas)
    snap.delta_bytes += point.delta_bytes
    snap.head = b""  # the chain's head is not this instance's write
    snap.adopt(instance, known=frozenset(folded))
    state, snap.rest = _state_and_rest(instance, snap.tracked)
    snap.names = tuple(n for n in state if n in folded)
    snap.keyed = {n: v for n, v in folded.items() if is_keyed(v)}
    for value in snap.keyed.values():
        value.keyed_mark()
    for delta in deltas:  # the packed entries follow the same deltas
        whole = {n: v.entries for n, v in delta["whole"].items()
                 if isinstance(v, KeyedParts) and v.packed}
        gone = set(delta["whole"]) | set(delta["drop"])
        changes = {n: (list(kd[1]), dict(kd[2])) for n, kd in delta.get("keyed", {}).items()
                   if delta.get("keyed_packed", False)}
        snap.packed = {n: e for n, e in snap.packed.items()
                       if n not in gone and (n in changes or n not in delta.get("keyed", {}))}
        snap._keep_packed(whole, changes)
    return True


@dataclass
class CachedTask:
    host: Any
    txid: int  # the txid whose state the live instance holds
    epoch: int  # the epoch it was written under


class TaskCache:
    """Live hosted instances of this Python worker, keyed by (namespace, component, task,
    config): an instance initialized with other config is never reused."""

    def __init__(self) -> None:
        self._tasks: dict[tuple[str, str, int, str], CachedTask] = {}

    def take(self, key: tuple[str, str, int, str]) -> CachedTask | None:
        """The live instance of ``key`` (removed: an attempt owns it until ``put``)."""
        return self._tasks.pop(key, None)

    def put(self, key: tuple[str, str, int, str], host: Any, txid: int, epoch: int) -> None:
        self._tasks[key] = CachedTask(host, txid, epoch)


def open_task(
    key: tuple[str, str, int, str],
    txid: int,
    epoch: int,
    cache: TaskCache,
    make_host: Callable[[], Any],
    load: Callable[[], Any],
    load_since: Callable[[int, bytes], Any] | None = None,
) -> tuple[Any, str]:
    """Step 2 of the module doc: ``(host, how)`` holding the state of txid-1; ``how`` is
    ``reused``, ``caught_up`` (``load_since(version, head)`` gave the deltas since the
    live instance's version), ``restored`` (built and restored from Redis) or ``started``
    (built: no state is stored below txid, a first run)."""
    cached = cache.take(key)
    if cached is not None:
        if cached.txid < txid and cached.epoch == epoch - 1:
            # No attempt of this task ran since it wrote version cached.txid, so that is
            # the restore point below txid: the batches between skipped the task
            # (``driver/waves.py``), and a batch re-run after a failure runs every task its
            # first attempt ran, taking an epoch.
            return cached.host, "reused"
        snap = getattr(cached.host.instance, "_stormshift_snap", None)
        if load_since is not None and snap is not None and snap.head \
                and cached.txid < txid and snap.version == cached.txid:
            point = load_since(snap.version, snap.head)
            if point is not None and catch_up(cached.host.instance, point):
                return cached.host, "caught_up"
    host = make_host()
    host.open()
    point = load()
    restore(host.instance, point)
    return host, "restored" if point is not None else "started"


def snapshot_of(host: Any, txid: int) -> tuple[bytes, str, int]:
    """Step 4: the ``(payload, kind, prev)`` of ``host``'s state at ``txid``."""
    return host.instance._stormshift_snap.payload(host.instance, txid)  # type: ignore[no-any-return]


def snapshot_written(host: Any, txid: int, head: bytes = b"") -> None:
    host.instance._stormshift_snap.written(host.instance, txid, head)
