"""A window, a pane's timing, the ends of time, and the one order of keys.

Windows are half-open ``[start_ms, end_ms)`` in integer milliseconds since
the epoch (UTC). ``stable_order`` gives keys a total order that does not
depend on Python's salted ``hash()`` or on arrival order: every place where
output order matters sorts with it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from enum import Enum
from json.encoder import encode_basestring_ascii as _json_str
from operator import attrgetter
from typing import Any

__all__ = [
    "END_OF_TIME_MS",
    "START_OF_TIME_MS",
    "Timing",
    "Window",
    "set_slot_state",
    "slot_state",
    "stable_order",
]

START_OF_TIME_MS = -(2**63)
"""The watermark before anything is known (every event time is after it)."""
END_OF_TIME_MS = 2**63 - 1
"""The watermark at end of input: every window is complete."""


def slot_state(obj: Any) -> dict[str, Any]:
    """A slotted dataclass's fields as the ``__dict__`` it had before ``__slots__``, in field
    order: its pickles keep the bytes older versions wrote, and older versions read them."""
    return {name: getattr(obj, name) for name in obj.__dataclass_fields__}


def set_slot_state(obj: Any, state: Any) -> None:
    """Fields from a pickle's state: a ``__dict__`` (every version so far), or ``(dict,
    slots)`` as plain pickling of a slotted object gives."""
    if isinstance(state, tuple):
        state = {**(state[0] or {}), **state[1]}
    for name, value in state.items():
        object.__setattr__(obj, name, value)


@dataclass(frozen=True, order=True, init=False, slots=True)
class Window:
    """Event times ``start_ms <= t < end_ms``."""

    start_ms: int
    end_ms: int
    _hash: int = field(repr=False, compare=False)

    def __init__(self, start_ms: int, end_ms: int) -> None:
        """Made per element and pane; slotted (one object, no ``__dict__``: a windowed task
        holds one or more per key, and reads them per element), with the hash computed once:
        a window is a dict key looked up a few times over its life (``__hash__``)."""
        if end_ms <= start_ms:
            raise ValueError(f"a window needs start_ms < end_ms, got [{start_ms}, {end_ms})")
        _set_start(self, start_ms)
        _set_end(self, end_ms)
        _set_hash(self, hash((start_ms, end_ms)))

    def __hash__(self) -> int:
        """The dataclass's hash (of ``(start_ms, end_ms)``: ints, so not salted), cached:
        reading it back costs half of computing it per lookup."""
        return self._hash

    def __getstate__(self) -> dict[str, int]:
        """Pickled as before the cached hash and the slots: the two fields, so pickles of
        either version load in the other (``__setstate__``)."""
        return {"start_ms": self.start_ms, "end_ms": self.end_ms}

    def __setstate__(self, state: dict[str, int]) -> None:
        """A pickle of any version (the fields' ``__dict__``): the hash recomputed."""
        _set_start(self, state["start_ms"])
        _set_end(self, state["end_ms"])
        _set_hash(self, hash((state["start_ms"], state["end_ms"])))

    def contains(self, event_ms: int) -> bool:
        return self.start_ms <= event_ms < self.end_ms

    def intersects(self, other: Window) -> bool:
        return self.start_ms < other.end_ms and other.start_ms < self.end_ms

    def span(self, other: Window) -> Window:
        return Window(min(self.start_ms, other.start_ms), max(self.end_ms, other.end_ms))

    def __repr__(self) -> str:
        return f"[{self.start_ms}, {self.end_ms})"


# the slots' own setters (a frozen dataclass's ``__setattr__`` refuses every write)
_set_start = vars(Window)["start_ms"].__set__
_set_end = vars(Window)["end_ms"].__set__
_set_hash = vars(Window)["_hash"].__set__


class Timing(str, Enum):
    """When a pane fired relative to the watermark (Beam's ``PaneInfo.Timing``)."""

    EARLY = "early"  # before the watermark passed the window's end
    ON_TIME = "on_time"  # the firing when the watermark passed the end
    LATE = "late"  # after that, for data within the allowed lateness


# ``timing.value`` (read per pane by bolts, e.g. to emit it): a C-level property, where
# ``Enum.value`` is two Python calls (enum's descriptor, then its getter); the same object
Timing.value = property(attrgetter("_value_"))  # type: ignore[assignment,method-assign]


def stable_order(value: Any) -> str:
    """A total, run-independent sort key for keys and values (JSON text). A plain ``str`` or
    ``int`` (the usual key, computed per tuple) is encoded as ``json.dumps`` would, directly."""
    kind = type(value)
    if kind is str:
        return _json_str(value)  # type: ignore[no-any-return]
    if kind is int:
        return int.__repr__(value)
    return json.dumps(value, sort_keys=True, default=repr, separators=(",", ":"))
