"""Incremental aggregation: a window keeps an accumulator, not its tuples.

``Aggregation`` is Beam's ``CombineFn`` / Flink's ``AggregateFunction``:
``init() -> acc``, ``add(acc, item) -> acc``, ``merge(a, b) -> acc`` (sessions
merging, panes combining), ``result(acc) -> value``. Results must not depend
on the order of ``add`` calls (arrival order within the lag varies): make
them commutative, or sort in ``result`` as ``Collect`` does. Accumulators are
state: keep them picklable (plain data).

``item`` is a ``WindowedTuple`` when used by a ``WindowedBolt``.
"""

from __future__ import annotations

from typing import Any, Generic, Protocol, TypeVar

from stormshift.windows.window import stable_order

__all__ = ["Aggregation", "Collect", "Count", "SumField"]

A = TypeVar("A")


class Aggregation(Protocol, Generic[A]):
    def init(self) -> A: ...

    def add(self, acc: A, item: Any) -> A: ...

    def merge(self, a: A, b: A) -> A: ...

    def result(self, acc: A) -> Any: ...


def _order(item: Any) -> tuple[Any, ...]:
    event_ms = getattr(item, "event_ms", 0)
    values = getattr(item, "values", item)
    return (event_ms, stable_order(list(values) if isinstance(values, tuple) else values))


class Collect:
    """Keep the items (Storm's window contents); ``result`` sorts them by event
    time, then by value, so the order never depends on arrival."""

    def init(self) -> list[Any]:
        return []

    def add(self, acc: list[Any], item: Any) -> list[Any]:
        acc.append(item)
        return acc

    def merge(self, a: list[Any], b: list[Any]) -> list[Any]:
        return a + b

    def result(self, acc: list[Any]) -> list[Any]:
        return sorted(acc, key=_order)


class Count:
    """The number of items."""

    def init(self) -> int:
        return 0

    def add(self, acc: int, item: Any) -> int:
        return acc + 1

    def merge(self, a: int, b: int) -> int:
        return a + b

    def result(self, acc: int) -> int:
        return acc


class SumField:
    """The sum of one field of the items (``item.value(field)``)."""

    def __init__(self, field: str) -> None:
        self.field = field

    def init(self) -> float:
        return 0

    def add(self, acc: float, item: Any) -> float:
        return acc + item.value(self.field)

    def merge(self, a: float, b: float) -> float:
        return a + b

    def result(self, acc: float) -> float:
        return acc
