"""Compare the result of one leaf stream on the legacy side and on the port, key by key.

Pure functions over emitted rows (no engine): ``compare_stream(spec, legacy,
port, tolerance)``. Vocabulary:

- *left* / *legacy*: the local engine with Storm semantics; *right* / *port*:
  the Spark engine. Deltas are ``port - legacy``.
- *divergence*: one key whose result differs beyond the tolerance, of a
  *kind*: ``missing key`` (in legacy, not in port: BigDiffy's missing-right),
  ``extra key`` (in port only: missing-left), ``value differs`` (a value field
  differs), ``count differs`` (the multiplicity differs: the number of emits
  summed into a ``sum`` key, a tuple's copies in a ``set``, a keyed ``list``'s
  length).
- *first divergence*: where, in the legacy's emit order (or event time), the
  key's emits stopped agreeing -- the report's chart of when the sides diverged.
  A port-only emit's position is scaled onto the legacy's emit count.
- *tolerance*: numbers ``a``, ``b`` are within it when ``|a - b| <= max(abs,
  rel * max(|a|, |b|))``; everything else compares exactly (after a JSON round
  trip, so a tuple equals a list; two integers too: they never round). A key whose values differ but are within
  the tolerance is still a divergence, marked ``within_tolerance`` (its cause
  is *rounding*, ``classify.py``): counted and shown, never silently equal
  and never blamed on the port. The default is relative ``1e-9``
  (``DEFAULT_REL``): a sum of doubles added in another order (a shuffle
  feeds Storm's and Spark's tasks in other orders) differs by about
  ``n * 1.1e-16`` of its magnitude for ``n`` terms, so a few ULPs would call a
  million-term sum a port difference, while ``1e-9`` stays far below any
  difference a business sees (one cent in ten million).
"""

from __future__ import annotations

import enum
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from stormshift.shadow.results import Group, ResultMode, ResultSpec, materialize

__all__ = [
    "DEFAULT_REL",
    "Divergence",
    "DivergenceCounts",
    "DivergenceKind",
    "FieldStats",
    "StreamComparison",
    "Tolerance",
    "compare_stream",
    "count_causes",
    "key_text",
]

#: the default relative float tolerance (module docstring: why 1e-9)
DEFAULT_REL = 1e-9


class DivergenceKind(str, enum.Enum):
    MISSING_KEY = "missing key"
    EXTRA_KEY = "extra key"
    VALUE_DIFFERS = "value differs"
    COUNT_DIFFERS = "count differs"


@dataclass(frozen=True)
class Tolerance:
    """Float tolerance: absolute and relative (default relative ``1e-9``; 0, 0: exact)."""

    abs: float = 0.0
    rel: float = DEFAULT_REL

    def __post_init__(self) -> None:
        if self.abs < 0 or self.rel < 0:
            raise ValueError(f"tolerances must be >= 0, got abs={self.abs} rel={self.rel}")

    def equal(self, a: Any, b: Any) -> bool:
        if _number(a) and _number(b):
            if isinstance(a, int) and isinstance(b, int):
                return a == b  # integers do not round: an epoch-ms count is exact
            return abs(a - b) <= max(self.abs, self.rel * max(abs(a), abs(b)))
        if isinstance(a, list) and isinstance(b, list):
            return len(a) == len(b) and all(self.equal(x, y) for x, y in zip(a, b, strict=True))
        if isinstance(a, dict) and isinstance(b, dict):
            return a.keys() == b.keys() and all(self.equal(a[k], b[k]) for k in a)
        return bool(a == b)

    def describe(self) -> str:
        """The tolerance as the reports print it."""
        parts = [f"rel {self.rel:g}" if self.rel else "", f"abs {self.abs:g}" if self.abs else ""]
        return ", ".join(p for p in parts if p) or "exact"


@dataclass
class Divergence:
    """One key whose result differs; ``cause`` (and ``detail``: the rule and file:line of a
    nondeterministic one) are set by ``classify``; ``within_tolerance``: the values differ
    only within the float tolerance (rounding)."""

    stream: str
    kind: DivergenceKind
    key: str
    legacy: Any
    port: Any
    legacy_count: int
    port_count: int
    fields: tuple[str, ...] = ()
    position: int = 0
    event_time: int | None = None
    magnitude: float = 0.0
    cause: str = ""
    within_tolerance: bool = False
    detail: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "within_tolerance": self.within_tolerance, "detail": self.detail,
            "stream": self.stream, "kind": self.kind.value, "key": self.key,
            "legacy": self.legacy, "port": self.port, "legacy_count": self.legacy_count,
            "port_count": self.port_count, "fields": list(self.fields),
            "position": self.position, "event_time": self.event_time, "cause": self.cause,
        }


@dataclass
class FieldStats:
    """Per value field, over keys on both sides with numbers there (deltas: port - legacy)."""

    name: str
    compared: int = 0
    different: int = 0
    min_delta: float = 0.0
    max_delta: float = 0.0
    sum_delta: float = 0.0
    sum_abs_delta: float = 0.0
    max_rel: float = 0.0

    @property
    def mean_delta(self) -> float:
        return self.sum_delta / self.compared if self.compared else 0.0

    @property
    def mean_abs_delta(self) -> float:
        return self.sum_abs_delta / self.compared if self.compared else 0.0

    def add(self, legacy: Any, port: Any, differs: bool) -> None:
        if not (_number(legacy) and _number(port)):
            return
        delta = port - legacy
        if self.compared == 0:
            self.min_delta = self.max_delta = delta
        self.compared += 1
        self.different += int(differs)
        self.min_delta, self.max_delta = min(self.min_delta, delta), max(self.max_delta, delta)
        self.sum_delta += delta
        self.sum_abs_delta += abs(delta)
        scale = max(abs(legacy), abs(port))
        if scale:
            self.max_rel = max(self.max_rel, abs(delta) / scale)

    def to_dict(self) -> dict[str, Any]:
        return {
            "field": self.name, "compared": self.compared, "different": self.different,
            "min_delta": self.min_delta, "max_delta": self.max_delta,
            "mean_delta": self.mean_delta, "mean_abs_delta": self.mean_abs_delta,
            "max_rel": self.max_rel,
        }


class DivergenceCounts:
    """BigDiffy's global counts over ``self.divergences`` and ``self.same`` (shared by a
    leaf stream's comparison and a final-state entry's, ``final_state.py``)."""

    same: int
    divergences: list[Divergence]

    def count(self, kind: DivergenceKind) -> int:
        return sum(1 for d in self.divergences if d.kind is kind)

    @property
    def different(self) -> int:
        return self.count(DivergenceKind.VALUE_DIFFERS) + self.count(DivergenceKind.COUNT_DIFFERS)

    @property
    def missing_right(self) -> int:
        """Keys in legacy only (missing in the port)."""
        return self.count(DivergenceKind.MISSING_KEY)

    @property
    def missing_left(self) -> int:
        """Keys in the port only (extra)."""
        return self.count(DivergenceKind.EXTRA_KEY)

    @property
    def keys(self) -> int:
        return self.same + len(self.divergences)

    @property
    def rounding(self) -> int:
        """Divergences within the float tolerance."""
        return sum(1 for d in self.divergences if d.within_tolerance)

    @property
    def equal(self) -> bool:
        """Equal within the tolerance (rounding differences are counted, not unequal)."""
        return all(d.within_tolerance for d in self.divergences)

    def top(self, n: int = 10) -> list[Divergence]:
        """The ``n`` largest divergences (relative size, then key)."""
        return sorted(self.divergences, key=lambda d: (-d.magnitude, d.key))[:n]


@dataclass
class StreamComparison(DivergenceCounts):
    """BigDiffy's global counts for one leaf stream, its field stats and divergences."""

    spec: ResultSpec
    legacy_emits: int
    port_emits: int
    same: int = 0
    divergences: list[Divergence] = field(default_factory=list)
    fields: list[FieldStats] = field(default_factory=list)

    @property
    def label(self) -> str:
        return self.spec.label

    @property
    def component(self) -> str:
        return self.spec.component

    def to_dict(self, examples: int = 50) -> dict[str, Any]:
        return {
            "stream": self.label, "mode": self.spec.mode.value, "key": list(self.spec.key),
            "rule": self.spec.describe(), "legacy_emits": self.legacy_emits,
            "port_emits": self.port_emits, "keys": self.keys, "same": self.same,
            "different": self.different, "missing_left": self.missing_left,
            "missing_right": self.missing_right,
            "kinds": {k.value: self.count(k) for k in DivergenceKind},
            "fields": [f.to_dict() for f in self.fields],
            "divergences": [d.to_dict() for d in self.top(examples)],
        }


def key_text(key: tuple[Any, ...]) -> str:
    """A key as the report shows it: the value of a one-field key, else a JSON list."""
    if len(key) == 1 and isinstance(key[0], str):
        return key[0]
    return json.dumps(list(key)) if len(key) != 1 else json.dumps(key[0])


def compare_stream(
    spec: ResultSpec,
    legacy: Sequence[Sequence[Any]],
    port: Sequence[Sequence[Any]],
    tolerance: Tolerance | None = None,
) -> StreamComparison:
    """Compare one leaf stream's emits (each side in its emit order)."""
    tol = tolerance or Tolerance()
    left, right = materialize(spec, legacy), materialize(spec, port)
    out = StreamComparison(spec, len(legacy), len(port))
    out.fields = [FieldStats(name) for name in spec.values]
    scale = len(legacy) / len(port) if port else 1.0
    for key in sorted(set(left) | set(right), key=_sort_key):
        a, b = left.get(key), right.get(key)
        divergence = _diverge(spec, key, a, b, tol, scale, out.fields)
        if divergence is None:
            out.same += 1
        else:
            out.divergences.append(divergence)
    return out


def _diverge(spec: ResultSpec, key: tuple[Any, ...], a: Group | None, b: Group | None,
             tol: Tolerance, scale: float, stats: list[FieldStats]) -> Divergence | None:
    shown = key_text(key) if spec.key or spec.mode is ResultMode.LIST else _tuple_text(a, b)
    if b is None:
        assert a is not None
        return Divergence(spec.label, DivergenceKind.MISSING_KEY, shown, a.value, None, a.count, 0,
                          tuple(spec.values), a.positions[0], a.times[0], 1.0)
    if a is None:
        return Divergence(spec.label, DivergenceKind.EXTRA_KEY, shown, None, b.value, 0, b.count,
                          tuple(spec.values), round(b.positions[0] * scale), b.times[0], 1.0)
    fields: tuple[str, ...] = ()
    magnitude = 0.0
    counted = spec.mode is not ResultMode.LATEST and a.count != b.count
    if not counted and a.value != b.value and tol.equal(a.value, b.value):
        for st, x, y in zip(stats, a.value, b.value, strict=False):
            st.add(x, y, False)
        rounded = tuple(f for f, x, y in zip(spec.values, a.value, b.value, strict=False) if x != y)
        return Divergence(spec.label, DivergenceKind.VALUE_DIFFERS, shown, a.value, b.value,
                          a.count, b.count, rounded or tuple(spec.values), a.positions[-1],
                          a.times[-1], _relative_max(a.value, b.value), within_tolerance=True)
    if spec.mode in (ResultMode.LATEST, ResultMode.SUM):
        differs = [not tol.equal(x, y) for x, y in zip(a.value, b.value, strict=True)]
        for st, x, y, d in zip(stats, a.value, b.value, differs, strict=True):
            st.add(x, y, d)
        fields = tuple(f for f, d in zip(spec.values, differs, strict=True) if d)
        magnitude = max((_relative(x, y) for x, y, d in zip(a.value, b.value, differs, strict=True)
                         if d), default=0.0)
    elif not tol.equal(a.value, b.value):
        fields = tuple(spec.values)
        magnitude = 1.0
    if not fields and not counted:
        return None
    kind = DivergenceKind.COUNT_DIFFERS if counted else DivergenceKind.VALUE_DIFFERS
    if counted:
        magnitude = max(magnitude, abs(a.count - b.count) / max(a.count, b.count))
    at = _first_divergence(spec, a, b, tol)
    if at < a.count:
        position, when = a.positions[at], a.times[at]
    else:
        position, when = round(b.positions[min(at, b.count - 1)] * scale), b.times[min(at, b.count - 1)]
    return Divergence(spec.label, kind, shown, a.value, b.value, a.count, b.count, fields,
                      position, when, magnitude)


def _first_divergence(spec: ResultSpec, a: Group, b: Group, tol: Tolerance) -> int:
    """Index of the first of a key's emits where the two sides disagree."""
    if spec.mode is ResultMode.SET:
        return min(a.count, b.count)
    if spec.mode is ResultMode.LIST:
        for i, (x, y) in enumerate(zip(a.value, b.value, strict=False)):
            if not tol.equal(x, y):
                return i
        return min(len(a.value), len(b.value))
    for i, (x, y) in enumerate(zip(a.history, b.history, strict=False)):
        if not tol.equal(x, y):
            return i
    return min(a.count, b.count)


def _tuple_text(a: Group | None, b: Group | None) -> str:
    group = a if a is not None else b
    return json.dumps(group.value if group is not None else None)


def _relative(x: Any, y: Any) -> float:
    if _number(x) and _number(y):
        scale = max(abs(x), abs(y))
        return abs(y - x) / scale if scale else 0.0
    return 1.0


def _relative_max(a: Any, b: Any) -> float:
    if isinstance(a, list) and isinstance(b, list):
        return max((_relative_max(x, y) for x, y in zip(a, b, strict=False)), default=0.0)
    return _relative(a, b) if a != b else 0.0


def _sort_key(key: tuple[Any, ...]) -> str:
    return json.dumps(list(key), sort_keys=True, default=str)


def _number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def count_causes(streams: Any) -> dict[str, int]:
    """Divergences per cause over ``streams`` (``StreamComparison``s), sorted by cause."""
    out: dict[str, int] = {}
    for s in streams:
        for d in s.divergences:
            out[d.cause] = out.get(d.cause, 0) + 1
    return dict(sorted(out.items()))
