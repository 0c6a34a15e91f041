"""What the windower hands out: panes, retractions, timer firings.

``Accumulation`` says what a window's later panes contain (the Dataflow
model): DISCARDING -- only what arrived since the previous pane;
ACCUMULATING -- everything so far; RETRACTING (accumulating and retracting)
-- everything so far, preceded by a ``Retraction`` of each pane it replaces
(the window's own previous pane, and the last panes of sessions merged into
it).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Any

from stormshift.windows.window import Timing, Window

__all__ = ["Accumulation", "Output", "Pane", "Retraction", "TimerFired"]


class Accumulation(str, Enum):
    DISCARDING = "discarding"
    ACCUMULATING = "accumulating"
    RETRACTING = "accumulating_and_retracting"


@dataclass(frozen=True, init=False)
class Pane:
    """One firing of one window of one key.

    ``index`` counts the window's panes from 0; ``result`` is the
    aggregation's result per the accumulation mode; ``new`` is the result of
    what arrived since the previous pane (equal to ``result`` when
    discarding); ``is_final`` is True on the last pane the window will ever
    fire (its state is then dropped).
    """

    key: Any
    window: Window
    timing: Timing
    index: int
    result: Any
    new: Any
    is_final: bool = False

    def __init__(self, key: Any, window: Window, timing: Timing, index: int, result: Any,
                 new: Any, is_final: bool = False) -> None:
        """One per firing: the fields straight into ``__dict__`` (``Window.__init__``)."""
        d = self.__dict__
        d["key"], d["window"], d["timing"], d["index"] = key, window, timing, index
        d["result"], d["new"], d["is_final"] = result, new, is_final


@dataclass(frozen=True)
class Retraction:
    """``result`` of an earlier pane of ``window`` no longer holds."""

    key: Any
    window: Window
    result: Any


@dataclass(frozen=True)
class TimerFired:
    """An event-time timer the user set: the watermark reached ``at_ms``."""

    key: Any
    at_ms: int
    tag: str


Output = Pane | Retraction | TimerFired
