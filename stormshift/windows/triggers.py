"""Triggers: when a window emits a pane (a pure state machine per window).

A ``Trigger`` is frozen config; ``TriggerState`` is the per-window state the
windower keeps and passes back in. Every window always fires ON_TIME when
the watermark passes its end (Beam's ``AfterWatermark``, fired even when
the pane is empty, so downstream sees a final answer). Optional:

- early firings, before the watermark: every ``early_every_count`` elements
  and/or ``early_every_ms`` of processing time after the first element of
  the pane (Beam's ``AfterProcessingTime.pastFirstElementInPane()``);
- late firings, after it, within the allowed lateness: every
  ``late_every_count`` late elements and/or ``late_every_ms`` of processing
  time (batched); with neither, one pane per late tuple. A batch
  still pending when the window expires fires as a last LATE pane.

Pure: ``on_element`` / ``on_processing_time`` return whether to fire, given
``now_ms`` and the window's completeness; nothing reads a clock.
"""

from __future__ import annotations

from dataclasses import dataclass

from stormshift.errors import WindowConfigError
from stormshift.windows.window import Timing, set_slot_state, slot_state

__all__ = ["Trigger", "TriggerState"]


def _check(name: str, value: int | None) -> None:
    if value is not None and (not isinstance(value, int) or value <= 0):
        raise WindowConfigError(f"Trigger.{name} must be a positive int or None, got {value!r}")


@dataclass(frozen=True)
class Trigger:
    early_every_count: int | None = None
    early_every_ms: int | None = None
    late_every_count: int | None = None  # None and no late_every_ms: 1 (a pane per late tuple)
    late_every_ms: int | None = None

    def __post_init__(self) -> None:
        for name in ("early_every_count", "early_every_ms", "late_every_count", "late_every_ms"):
            _check(name, getattr(self, name))

    def late_count(self) -> int | None:
        if self.late_every_count is None and self.late_every_ms is None:
            return 1
        return self.late_every_count

    @property
    def uses_processing_time(self) -> bool:
        return self.early_every_ms is not None or self.late_every_ms is not None

    def processing_interval_ms(self) -> int | None:
        """The finest processing-time period this trigger needs ticks for."""
        periods = [p for p in (self.early_every_ms, self.late_every_ms) if p is not None]
        return min(periods) if periods else None


@dataclass(slots=True)
class TriggerState:
    """Per window: elements and processing-time deadline of the pending pane. Slotted, one
    object (a task holds one per open window; ``window.slot_state``: pickled as before)."""

    count: int = 0  # elements since the last pane
    deadline_ms: int | None = None  # processing-time firing of the pending pane
    panes: int = 0  # panes fired so far
    on_time_fired: bool = False

    def on_element(self, trigger: Trigger, complete: bool, now_ms: int) -> Timing | None:
        """An element joined the window; the timing of a pane to fire now, if any."""
        # inlined in Windower.add: change both
        self.count += 1
        every_count = trigger.late_count() if complete else trigger.early_every_count
        every_ms = trigger.late_every_ms if complete else trigger.early_every_ms
        if every_ms is not None and self.deadline_ms is None:
            self.deadline_ms = now_ms + every_ms
        if every_count is not None and self.count >= every_count:
            return Timing.LATE if complete else Timing.EARLY
        return None

    def on_processing_time(self, complete: bool, now_ms: int) -> Timing | None:
        if self.deadline_ms is not None and now_ms >= self.deadline_ms and self.count:
            return Timing.LATE if complete else Timing.EARLY
        return None

    def fired(self, timing: Timing) -> None:  # inlined in Windower._fire: change both
        self.count = 0
        self.deadline_ms = None
        self.panes += 1
        if timing is Timing.ON_TIME:
            self.on_time_fired = True

    __getstate__ = slot_state
    __setstate__ = set_slot_state

    def merge(self, other: TriggerState) -> TriggerState:
        """The state of a session merged from two windows."""
        deadlines = [d for d in (self.deadline_ms, other.deadline_ms) if d is not None]
        return TriggerState(
            count=self.count + other.count,
            deadline_ms=min(deadlines) if deadlines else None,
            panes=max(self.panes, other.panes),
            on_time_fired=self.on_time_fired or other.on_time_fired,
        )
