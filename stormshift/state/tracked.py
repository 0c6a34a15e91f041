"""Change-tracking dict types: what a batch changed in a legacy bolt's dicts.

A legacy bolt keeps its state in plain attributes (``self.counts = Counter()``).
Pickling them whole after every batch costs the state's size, not the batch's
change. After ``initialize()`` (and after each snapshot, for attributes made
later) the engine swaps each ``dict``, ``Counter``, ``defaultdict`` and
``OrderedDict`` attribute for the subclass below, which behaves the same to
user code (isinstance, ==, repr, pickling and copies give the plain type,
Counter arithmetic, the default factory, OrderedDict order) and records which
keys were inserted (in order), updated in place and deleted since the last
snapshot. Dict-like values one level down are tracked as well: a change inside
one marks its outer key changed. A value that can change behind the tracker's
back (a list, a set, an object, a dict put in by the user) keeps its key
*volatile*: written at every snapshot while it is there. ``clear()`` and
``move_to_end(last=False)`` mark the whole attribute (written whole once).
What deltas hold and how they fold: ``state/component/deltas.py``.

Every write of a bolt goes through the subclass's setter, so ``dict`` and ``Counter``
take their writes from ``state/ctracked.pyx`` (a ``cdef class`` base: the setter and
deleter in the type's C slot) where the install built it; ``PURE_TYPES`` (a Python
``__setitem__`` per class) is the fallback and the tests run both.
"""

from __future__ import annotations

import datetime
import decimal
import fractions
import importlib
from collections import Counter, OrderedDict, defaultdict
from collections.abc import Mapping
from typing import Any

__all__ = ["TRACKABLE", "Changes", "is_tracked", "track", "untracked_type"]

_SCALARS = frozenset({int, float, str, bytes, bool, type(None), complex, decimal.Decimal,
                      fractions.Fraction, datetime.date, datetime.datetime, datetime.time,
                      datetime.timedelta})


def _immutable(value: Any) -> bool:
    t = type(value)
    if t in _SCALARS:
        return True
    if t is tuple or t is frozenset:
        return all(_immutable(v) for v in value)
    return False


class Changes:
    """Keys touched since the last snapshot, each an ordered set (a dict of None):
    ``inserted`` (in the order of their last insertion), ``updated`` in place, ``deleted``,
    ``volatile`` (values that may change unseen); ``whole``: write the attribute whole."""

    __slots__ = ("deleted", "inserted", "updated", "volatile", "whole")

    def __init__(self) -> None:
        self.inserted: dict[Any, None] = {}
        self.updated: dict[Any, None] = {}
        self.deleted: dict[Any, None] = {}
        self.volatile: dict[Any, None] = {}
        self.whole = False

    def reset(self) -> None:
        """After a snapshot: nothing changed since (volatile keys stay volatile). Cleared in
        place: the tracked dict holds these dicts itself (one lookup less per update)."""
        self.inserted.clear()
        self.updated.clear()
        self.deleted.clear()
        self.whole = False


class _Tracking:
    """Shared methods; ``_ch`` is the Changes of an outer dict, ``_up`` (outer, key) of an
    inner one (whose changes only mark its outer key)."""

    __slots__ = ()
    _ch: Changes | None
    _up: tuple[Any, Any] | None

    def _init(self: Any, up: tuple[Any, Any] | None) -> None:
        self._up = up
        self._ch = ch = None if up is not None else Changes()
        self._upd = None if ch is None else ch.updated
        self._ins = None if ch is None else ch.inserted
        self._vol = None if ch is None else ch.volatile

    def _touch(self: Any, key: Any) -> None:  # an inner value of ``key`` changed
        ch = self._ch
        if ch is not None and key not in ch.inserted and dict.__contains__(self, key):
            ch.updated[key] = None

    def _bubble(self: Any, value: Any) -> None:
        outer, key = self._up  # type: ignore[misc]
        outer._touch(key)
        if not _immutable(value) and outer._ch is not None:
            outer._ch.volatile[key] = None

    def _gone(self: Any, key: Any) -> None:
        ch = self._ch
        if ch is None:
            self._up[0]._touch(self._up[1])  # type: ignore[index]
            return
        ch.inserted.pop(key, None)
        ch.updated.pop(key, None)
        ch.volatile.pop(key, None)
        ch.deleted[key] = None

    def pop(self: Any, key: Any, *default: Any) -> Any:
        if dict.__contains__(self, key):
            self._gone(key)
        return super().pop(key, *default)  # type: ignore[misc]

    def popitem(self: Any, *args: Any, **kw: Any) -> Any:
        key, value = super().popitem(*args, **kw)  # type: ignore[misc]
        self._gone(key)
        return key, value

    def setdefault(self: Any, key: Any, default: Any = None) -> Any:
        if dict.__contains__(self, key):
            return dict.__getitem__(self, key)
        self[key] = default
        return default

    def update(self: Any, other: Any = (), /, **kwds: Any) -> None:
        if isinstance(other, Mapping) or hasattr(other, "keys"):
            for key in other.keys():  # noqa: SIM118 - dict.update calls keys()
                self[key] = other[key]
        else:
            for key, value in other:
                self[key] = value
        for key, value in kwds.items():
            self[key] = value

    def clear(self: Any) -> None:
        super().clear()  # type: ignore[misc]
        if self._ch is None:
            self._up[0]._touch(self._up[1])  # type: ignore[index]
            return
        self._ch.reset()
        self._ch.volatile.clear()
        self._ch.whole = True

    def __ior__(self: Any, other: Any) -> Any:
        self.update(other)
        return self

    def __or__(self: Any, other: Any) -> Any:
        if not isinstance(other, dict):
            return NotImplemented
        new = self.copy()  # type: ignore[attr-defined]
        new.update(other)
        return new

    def __ror__(self: Any, other: Any) -> Any:
        if not isinstance(other, dict):
            return NotImplemented
        new = self.copy()  # type: ignore[attr-defined]
        new.clear()
        new.update(other)
        new.update(self)
        return new

    @classmethod
    def fromkeys(cls, iterable: Any, value: Any = None) -> Any:
        plain: Any = _PLAIN[cls]
        return plain.fromkeys(iterable, value)


def _setter(base_set: Any) -> Any:
    """``__setitem__`` over ``base_set`` (the per-update cost of tracking: keep it lean;
    an inserted key cannot already be in ``inserted``: a delete takes it out)."""
    scalars = _SCALARS

    def __setitem__(self: Any, key: Any, value: Any) -> None:
        updated = self._upd
        if updated is None:  # an inner dict: mark its outer key
            base_set(self, key, value)
            self._bubble(value)
            return
        if key in self:
            base_set(self, key, value)
            updated[key] = None
        else:
            base_set(self, key, value)
            self._ins[key] = None
        if type(value) in scalars or _settled(self, key, value):
            if self._vol:
                self._vol.pop(key, None)
        else:
            self._vol[key] = None

    return __setitem__


def _settled(outer: Any, key: Any, value: Any) -> bool:
    """``value`` cannot change behind ``outer``'s back: immutable, or its own tracked inner."""
    if isinstance(value, _Tracking):
        return value._up is not None and value._up[0] is outer and value._up[1] == key
    return _immutable(value)


class _PyWrites:
    """The pure-Python writes (the fallback of ``ctracked.TrackBase``): a ``__setitem__``
    from ``_setter`` in each class, and this ``__delitem__``."""

    __slots__ = ()

    def __delitem__(self: Any, key: Any) -> None:
        present = dict.__contains__(self, key)
        super().__delitem__(key)  # type: ignore[misc]
        if present:
            self._gone(key)


class _DictMethods:
    __slots__ = ()

    def __reduce_ex__(self: Any, protocol: Any) -> Any:
        return dict, (), None, None, iter(dict.items(self))

    def copy(self: Any) -> dict[Any, Any]:
        return dict(self)


class _CounterMethods:
    __slots__ = ()

    def update(self: Any, iterable: Any = None, /, **kwds: Any) -> None:  # Counter.update: add
        if iterable is not None:
            if isinstance(iterable, Mapping):
                if dict.__len__(self):  # as Counter.update: add to a non-empty Counter
                    get = self.get
                    for elem, count in iterable.items():
                        self[elem] = count + get(elem, 0)
                else:  # ... and copy into an empty one
                    for elem, count in iterable.items():
                        self[elem] = count
            else:
                get = self.get
                for elem in iterable:
                    self[elem] = get(elem, 0) + 1
        if kwds:
            self.update(kwds)

    def __reduce_ex__(self: Any, protocol: Any) -> Any:
        return Counter, (dict(self),)

    def copy(self: Any) -> Counter[Any]:
        return Counter(dict(self))

    def __or__(self: Any, other: Any) -> Any:
        return Counter.__or__(self, other)

    def __ror__(self: Any, other: Any) -> Any:
        return dict.__ror__(self, other)

    def __ior__(self: Any, other: Any) -> Any:
        return Counter.__ior__(self, other)


_FIELDS = ("_ch", "_ins", "_up", "_upd", "_vol")


class TrackedDict(_DictMethods, _Tracking, _PyWrites, dict):  # type: ignore[misc]
    __slots__ = _FIELDS
    _base_set = dict.__setitem__
    __setitem__ = _setter(dict.__setitem__)


class TrackedCounter(_CounterMethods, _Tracking, _PyWrites, Counter):  # type: ignore[misc]
    __slots__ = _FIELDS
    _base_set = dict.__setitem__
    __setitem__ = _setter(dict.__setitem__)


class TrackedOrderedDict(_Tracking, _PyWrites, OrderedDict):  # type: ignore[misc]
    __slots__ = _FIELDS
    _base_set = OrderedDict.__setitem__
    __setitem__ = _setter(OrderedDict.__setitem__)

    def move_to_end(self, key: Any, last: bool = True) -> None:
        OrderedDict.move_to_end(self, key, last)
        ch = self._ch
        if ch is None:
            self._up[0]._touch(self._up[1])  # type: ignore[index]
        elif last:
            ch.updated.pop(key, None)
            ch.inserted.pop(key, None)
            ch.inserted[key] = None
        else:
            ch.whole = True

    def __reduce_ex__(self, protocol: Any) -> Any:
        return OrderedDict, (), None, None, iter(OrderedDict.items(self))

    def copy(self) -> OrderedDict[Any, Any]:  # type: ignore[override]
        return OrderedDict(self)


class TrackedDefaultDict(_Tracking, _PyWrites, defaultdict):  # type: ignore[misc]
    __slots__ = _FIELDS
    _base_set = dict.__setitem__
    __setitem__ = _setter(dict.__setitem__)

    def __missing__(self, key: Any) -> Any:
        factory = self.default_factory
        if factory is None:
            raise KeyError(key)
        value = factory()
        if self._ch is not None:
            value = _inner(value, self, key)
        self[key] = value
        return value

    def __reduce_ex__(self, protocol: Any) -> Any:
        return defaultdict, (self.default_factory,), None, None, iter(dict.items(self))

    def copy(self) -> defaultdict[Any, Any]:  # type: ignore[override]
        return defaultdict(self.default_factory, dict(self))


def _native_base() -> Any:
    """``ctracked.TrackBase`` where this install built it from the ``.pyx`` beside it (and
    ``STORMSHIFT_PURE`` does not name it), else None: the pure writes above."""
    from stormshift import native
    if native.status().get(NATIVE) != "compiled":
        return None
    try:
        module = importlib.import_module(NATIVE)
    except ImportError:
        return None
    module.configure(_SCALARS, _settled)
    return module.TrackBase


NATIVE = "stormshift.state.ctracked"
NATIVE_BASE = _native_base()
PURE_TYPES: dict[type, type] = {dict: TrackedDict, Counter: TrackedCounter,
                                OrderedDict: TrackedOrderedDict, defaultdict: TrackedDefaultDict}
"""The pure-Python family (what runs without the C base; the tests run both)."""
_TRACKED: dict[type, type] = dict(PURE_TYPES)
if NATIVE_BASE is not None:
    class CTrackedDict(_DictMethods, _Tracking, NATIVE_BASE):  # type: ignore[misc, valid-type]
        __slots__ = ()
        _base_set = dict.__setitem__

    class CTrackedCounter(_CounterMethods, _Tracking, NATIVE_BASE, Counter):  # type: ignore[misc, valid-type]
        __slots__ = ()
        _base_set = dict.__setitem__

        def _init(self, up: tuple[Any, Any] | None) -> None:
            _Tracking._init(self, up)
            self._lenient_del = True  # as Counter.__delitem__

    _TRACKED.update({dict: CTrackedDict, Counter: CTrackedCounter})

# Same names as the plain types: repr (which prints the class name) stays identical.
_PLAIN: dict[type, type] = {tracked: plain for family in (PURE_TYPES, _TRACKED)
                            for plain, tracked in family.items()}
for _cls, _plain in _PLAIN.items():
    _cls.__name__ = _cls.__qualname__ = _plain.__name__
TRACKABLE = frozenset(_TRACKED)


def untracked_type(value: Any) -> type:
    """The plain type a tracked value stands for (the value's own type otherwise)."""
    return _PLAIN.get(type(value), type(value))


def is_tracked(value: Any) -> bool:
    return isinstance(value, _Tracking) and value._ch is not None


def _new(plain: type, up: tuple[Any, Any] | None, value: Any) -> Any:
    cls: Any = _TRACKED[plain]
    obj = cls(value.default_factory) if plain is defaultdict else cls()
    obj._init(up)
    for key, item in value.items():  # the plain type's items, in its order
        if up is None:
            item = _inner(item, obj, key)
        cls._base_set(obj, key, item)
    return obj


def _inner(value: Any, outer: Any, key: Any) -> Any:
    """A dict-like value of ``outer[key]`` as a tracked inner (anything else as it is)."""
    plain = type(value)
    return _new(plain, (outer, key), value) if plain in _TRACKED else value


def track(value: Any) -> Any:
    """A tracked copy of a plain dict, Counter, defaultdict or OrderedDict (its dict-like
    values tracked one level down), with no changes recorded; volatile keys noted."""
    obj = _new(type(value), None, value)
    volatile = obj._ch.volatile
    for key, item in dict.items(obj):
        inner = isinstance(item, _Tracking)
        if not (_immutable(item) or inner) or inner and not all(map(_immutable, dict.values(item))):
            volatile[key] = None
    return obj


def changes_of(value: Any) -> Changes:
    return value._ch  # type: ignore[no-any-return]

