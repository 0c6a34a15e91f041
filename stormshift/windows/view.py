"""What a windowed bolt's ``process(window)`` sees, and the retraction streams.

``WindowedTuple`` is a window's copy of an input tuple: Storm's ``id``,
``component``, ``stream``, ``task`` and ``values`` (a plain tuple, so a
window's contents pickle), the stream's ``fields`` and the ``event_ms`` the
bolt assigned it. ``TupleWindow`` is Storm's ``TupleWindow`` plus the pane:
``get()``, ``get_new()``, ``get_expired()``, ``start_ms`` / ``end_ms``
(half-open), ``key``, ``timing``, ``index``, ``is_final`` and, with an
incremental aggregation, ``result`` / ``new_result``.

Retractions (accumulating-and-retracting mode) are a dedicated stream per
output stream: what a pane emitted on ``S`` is re-emitted, same values, on
``S + "_retract"`` when a later pane replaces it. Declare them with
``with_retractions(outputs)``; a downstream bolt tells them apart by
``tup.stream`` and subscribes to them explicitly (a bolt that only reads
``S`` never sees a retraction).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

from streamparse import Stream

from stormshift.windows.panes import Pane
from stormshift.windows.window import Timing

__all__ = [
    "RETRACT_SUFFIX",
    "TupleWindow",
    "WindowedTuple",
    "retraction_stream",
    "with_retractions",
]

RETRACT_SUFFIX = "_retract"


def retraction_stream(stream: str) -> str:
    return stream + RETRACT_SUFFIX


def with_retractions(outputs: Sequence[Any]) -> list[Any]:
    """``outputs`` plus ``<stream>_retract`` (same fields) for each stream.

    A list of field names means the default stream, as in streamparse.
    """
    if all(isinstance(o, str) for o in outputs):
        outputs = [Stream(fields=list(outputs))]
    extra = [Stream(fields=list(s.fields), name=retraction_stream(s.name)) for s in outputs
             if not s.name.endswith(RETRACT_SUFFIX)]
    return [*outputs, *extra]


class WindowedTuple(NamedTuple):
    id: str
    component: str
    stream: str
    task: int
    values: tuple[Any, ...]
    fields: tuple[str, ...]
    event_ms: int

    def value(self, field: str) -> Any:
        """The value of ``field`` (Storm's ``getValueByField``)."""
        try:
            return self.values[self.fields.index(field)]
        except ValueError:
            raise KeyError(f"stream {self.component}:{self.stream} has fields "
                           f"{list(self.fields)}, not {field!r}") from None


class TupleWindow:
    """One pane of one window, as ``process(window)`` receives it."""

    def __init__(self, pane: Pane, expired: list[WindowedTuple], collects: bool,
                 component: str) -> None:
        self.pane = pane
        self.key = pane.key
        self.start_ms = pane.window.start_ms
        self.end_ms = pane.window.end_ms
        self.timing: Timing = pane.timing
        self.index = pane.index
        self.is_final = pane.is_final
        self.result = pane.result
        self.new_result = pane.new
        self._expired = expired
        self._collects = collects
        self._component = component

    def _tuples(self, what: Any, call: str) -> list[WindowedTuple]:
        if not self._collects:
            raise TypeError(
                f"component {self._component!r}: window.{call}() needs the window's tuples, "
                "but this bolt aggregates incrementally (with_aggregation): read "
                "window.result (and window.new_result) instead")
        return list(what)

    def get(self) -> list[WindowedTuple]:
        """The pane's tuples by event time (discarding: only those since the last pane)."""
        return self._tuples(self.pane.result, "get")

    def get_new(self) -> list[WindowedTuple]:
        """Tuples that arrived since this window's previous pane."""
        return self._tuples(self.pane.new, "get_new")

    def get_expired(self) -> list[WindowedTuple]:
        """Tuples of this key's previously fired window that are not in this one
        (Storm's sliding-window view); empty for EARLY and LATE panes."""
        return self._tuples(self._expired, "get_expired")

    def __repr__(self) -> str:
        return (f"TupleWindow(key={self.key!r}, [{self.start_ms}, {self.end_ms}), "
                f"{self.timing.value}, index={self.index})")
