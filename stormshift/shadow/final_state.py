"""Compare what the bolts hold at the end of the two runs: their final state, key by key.

Pure functions over ``RunSummary.final_state`` (``engines/summary.py``): the
local engine reports its live instances' user attributes and the bolts' keyed
state maps (held in memory), the Spark engine each task's last committed
snapshot and the bolts' keyed state maps.
Vocabulary:

- *entry*: one named piece of a bolt's state, compared as a mapping key ->
  value: a keyed state map (``stormshift.state.opaque_map("counts")``) or a
  user attribute (``self.counts = Counter()``). An attribute and a map of the
  same name are the same entry, so a port that moves ``self.counts`` into
  ``opaque_map("counts")`` is compared with the legacy's attribute.
- *keys of an attribute*: a dict-like attribute's keys; a set's elements
  (value 1); any other value is the one key ``(value)``.
- *user state only*: attributes pystorm, streamparse or stormshift set (a
  ``BatchingBolt``'s ``_batches``, ``_tick_counter``) are never entries
  (``state/component/attributes.py``, the definition the snapshots use).
- *merging tasks*: the entry of a component is its tasks' entries merged, so
  it does not depend on which task held what (the engines shuffle
  differently): a key held by several tasks gets the sum of their values
  when they are numbers (a counter split over tasks), their items in one
  sorted list when they are lists (a ``self.history = []`` per task), else
  the sorted list of them.
- divergence kinds, tolerance and causes are those of leaf streams
  (``compare.py``, ``classify.py``); ``count differs`` is a collection value
  (list, dict) whose length differs. Final state has no time: divergences
  carry no position or event time.

``shadow.state`` in the topology config (or ``-o``) leaves entries out::

    "shadow.state": {"ignore": ["count_bolt.started_at", "log_bolt"]}
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from typing import Any

from stormshift.errors import OptionError
from stormshift.shadow.compare import (
    Divergence,
    DivergenceCounts,
    DivergenceKind,
    Tolerance,
    key_text,
)
from stormshift.state.component import is_user_attribute
from stormshift.state.maps import MapHandle

__all__ = ["STATE_KEY", "StateComparison", "compare_entry", "compare_state", "entries_of", "ignored"]

STATE_KEY = "shadow.state"
WHOLE = "(value)"


@dataclass
class StateComparison(DivergenceCounts):
    """One entry of one bolt's final state on both sides, key by key."""

    component: str
    entry: str
    legacy_source: str  # "attribute", "map" or "absent"
    port_source: str
    legacy_keys: int
    port_keys: int
    same: int = 0
    divergences: list[Divergence] = field(default_factory=list)

    @property
    def label(self) -> str:
        return f"{self.component}.{self.entry}"

    def to_dict(self, examples: int = 50) -> dict[str, Any]:
        return {
            "state": self.label, "component": self.component, "entry": self.entry,
            "legacy_source": self.legacy_source, "port_source": self.port_source,
            "legacy_keys": self.legacy_keys, "port_keys": self.port_keys, "keys": self.keys,
            "same": self.same, "different": self.different, "missing_left": self.missing_left,
            "missing_right": self.missing_right,
            "kinds": {k.value: self.count(k) for k in DivergenceKind},
            "divergences": [d.to_dict() for d in self.top(examples)],
        }


def ignored(config: Mapping[str, Any]) -> frozenset[str]:
    """``shadow.state.ignore`` of a config: component or ``component.entry`` names."""
    entry = config.get(STATE_KEY) or {}
    names = entry.get("ignore", []) if isinstance(entry, Mapping) else None
    if (not isinstance(entry, Mapping) or set(entry) - {"ignore"} or not isinstance(names, list)
            or not all(isinstance(n, str) for n in names)):
        raise OptionError(
            f'{STATE_KEY} must be {{"ignore": ["component" or "component.entry", ...]}}, '
            f"got {entry!r}"
        )
    return frozenset(names)


def _plain(value: Any) -> Any:
    """A value as JSON carries it: tuples and sets as lists (sets sorted), objects by their
    attributes; so both engines' values compare alike. A container that refuses to be walked
    (a client library's connection pool raises on iteration) is its type name."""
    try:
        return _plain_walk(value)
    except (NotImplementedError, TypeError, RuntimeError):
        return f"<{type(value).__qualname__}>"


def _plain_walk(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {key_text(_key(k)): _plain(v) for k, v in value.items()}
    if isinstance(value, AbstractSet):
        return sorted((_plain(v) for v in value), key=_order)
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    if hasattr(value, "__dict__"):
        return {"__class__": type(value).__name__, **_plain(vars(value))}
    return json.loads(json.dumps(value, default=str))


def _key(k: Any) -> tuple[Any, ...]:
    return tuple(_plain(x) for x in k) if isinstance(k, tuple) else (_plain(k),)


def _order(v: Any) -> str:
    return json.dumps(v, sort_keys=True, default=str)


def _keys_of(value: Any) -> dict[str, Any]:
    """An attribute as key -> value (module docstring)."""
    if isinstance(value, Mapping):
        return {key_text(_key(k)): _plain(v) for k, v in value.items()}
    if isinstance(value, AbstractSet):
        return {key_text(_key(v)): 1 for v in value}
    return {WHOLE: _plain(value)}


def _merge(held: list[Any]) -> Any:
    if len(held) == 1:
        return held[0]
    if all(_number(v) for v in held):
        return sum(held)
    if all(isinstance(v, list) for v in held):  # a list per task: one list of their items
        return sorted((x for v in held for x in v), key=_order)
    return sorted(held, key=_order)


def entries_of(state: Any) -> dict[str, tuple[str, dict[str, Any]]]:
    """A ``ComponentState``'s entries: name -> (source, key -> value), tasks merged."""
    held: dict[str, dict[str, list[Any]]] = {}
    for attrs in state.tasks:
        for name, value in attrs.items():
            if isinstance(value, MapHandle) or not is_user_attribute(name):
                continue  # a handle holds no state (its map does); pystorm's own is not the user's
            keys = held.setdefault(name, {})
            for k, v in _keys_of(value).items():
                keys.setdefault(k, []).append(v)
    out = {name: ("attribute", {k: _merge(vs) for k, vs in keys.items()})
           for name, keys in held.items()}
    for name, items in state.maps.items():
        out[name] = ("map", {key_text(_key(k)): _plain(v) for k, v in items.items()})
    return dict(sorted(out.items()))


def compare_state(legacy: Mapping[str, Any], port: Mapping[str, Any],
                  tolerance: Tolerance | None = None,
                  ignore: Iterable[str] = ()) -> list[StateComparison]:
    """Every entry of every bolt in either final state (``RunSummary.final_state``)."""
    tol, skip = tolerance or Tolerance(), set(ignore)
    out = []
    for component in sorted(set(legacy) | set(port)):
        if component in skip:
            continue
        left = entries_of(legacy[component]) if component in legacy else {}
        right = entries_of(port[component]) if component in port else {}
        for entry in sorted(set(left) | set(right)):
            if f"{component}.{entry}" in skip:
                continue
            a_src, a = left.get(entry, ("absent", {}))
            b_src, b = right.get(entry, ("absent", {}))
            out.append(compare_entry(component, entry, (a_src, a), (b_src, b), tol))
    return out


def compare_entry(component: str, entry: str, left: tuple[str, dict[str, Any]],
                   right: tuple[str, dict[str, Any]], tol: Tolerance) -> StateComparison:
    (a_src, a), (b_src, b) = left, right
    out = StateComparison(component, entry, a_src, b_src, len(a), len(b))
    label = out.label
    for key in sorted(set(a) | set(b)):
        if key not in b:
            out.divergences.append(Divergence(label, DivergenceKind.MISSING_KEY, key, a[key], None,
                                              _size(a[key]), 0, magnitude=1.0))
        elif key not in a:
            out.divergences.append(Divergence(label, DivergenceKind.EXTRA_KEY, key, None, b[key],
                                              0, _size(b[key]), magnitude=1.0))
        elif a[key] == b[key]:
            out.same += 1
        elif tol.equal(a[key], b[key]):
            out.divergences.append(Divergence(label, DivergenceKind.VALUE_DIFFERS, key, a[key],
                                              b[key], _size(a[key]), _size(b[key]),
                                              magnitude=_relative(a[key], b[key]),
                                              within_tolerance=True))
        else:
            x, y = a[key], b[key]
            counted = isinstance(x, (list, dict)) and isinstance(y, (list, dict)) and (
                len(x) != len(y))
            kind = DivergenceKind.COUNT_DIFFERS if counted else DivergenceKind.VALUE_DIFFERS
            out.divergences.append(Divergence(label, kind, key, x, y, _size(x), _size(y),
                                              magnitude=_relative(x, y)))
    return out


def _size(value: Any) -> int:
    return len(value) if isinstance(value, (list, dict)) else 1


def _relative(x: Any, y: Any) -> float:
    if _number(x) and _number(y):
        scale = max(abs(x), abs(y))
        return abs(y - x) / scale if scale else 0.0
    return 1.0


def _number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)
