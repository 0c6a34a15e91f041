"""Engine time and the per-task plumbing of the local engine.

- ``Clock``: where engine time comes from. ``WallClock`` is real time (CLI
  runs); ``SimClock`` is simulated: every scheduler round costs
  ``ms_per_round`` and idle waits jump straight to the next deadline, so
  timeouts and ticks are exact and a run with the same seed is identical.
- ``Periodic``: recurring deadlines (tick tuples, TicklessBatchingBolt
  flushes), fired in registration order.
- ``TICK``: the marker queued to a bolt task for a tick tuple. Storm puts tick
  tuples into the executor's receive queue, so they are FIFO with data.
"""

from __future__ import annotations

import time
from collections.abc import Hashable
from typing import Protocol

__all__ = ["TICK", "Clock", "Periodic", "SimClock", "WallClock"]


class _Tick:
    __slots__ = ()

    def __repr__(self) -> str:
        return "TICK"


TICK = _Tick()


class Clock(Protocol):
    """Engine time in integer ms; the engine calls ``round_done`` once per round."""

    def now_ms(self) -> int: ...

    def wait_ms(self, duration_ms: int) -> None: ...

    def round_done(self) -> None: ...


class WallClock:
    """Monotonic real time; waits sleep."""

    def __init__(self) -> None:
        self._origin_ns = time.monotonic_ns()

    def now_ms(self) -> int:
        return (time.monotonic_ns() - self._origin_ns) // 1_000_000

    def wait_ms(self, duration_ms: int) -> None:
        if duration_ms > 0:
            time.sleep(duration_ms / 1000)

    def round_done(self) -> None:
        return None


class SimClock:
    """Simulated time: ``ms_per_round`` per scheduler round, waits are instant jumps."""

    def __init__(self, start_ms: int = 0, ms_per_round: int = 1) -> None:
        if ms_per_round < 0:
            raise ValueError(f"ms_per_round must be >= 0, got {ms_per_round}")
        self._now_ms = start_ms
        self.ms_per_round = ms_per_round

    def now_ms(self) -> int:
        return self._now_ms

    def wait_ms(self, duration_ms: int) -> None:
        self._now_ms += max(0, duration_ms)

    def round_done(self) -> None:
        self._now_ms += self.ms_per_round

    def advance(self, duration_ms: int) -> None:
        """Move time forward by hand (tests)."""
        self.wait_ms(duration_ms)


class Periodic:
    """Recurring deadlines keyed by any hashable, each with its own interval.

    A deadline that fires sets the next one ``interval_ms`` later (or
    ``interval_ms`` after now if the engine fell behind: no burst of
    catch-up ticks, like Storm's recurring timer).
    """

    def __init__(self) -> None:
        self._next_ms: dict[Hashable, int] = {}
        self._interval_ms: dict[Hashable, int] = {}

    def __bool__(self) -> bool:
        return bool(self._next_ms)

    def add(self, key: Hashable, interval_ms: int, now_ms: int) -> None:
        if interval_ms <= 0:
            raise ValueError(f"{key!r}: interval must be positive, got {interval_ms} ms")
        self._interval_ms[key] = interval_ms
        self._next_ms[key] = now_ms + interval_ms

    def due(self, now_ms: int) -> list[Hashable]:
        """Keys whose deadline passed, in registration order; reschedules them."""
        fired = [k for k, at in self._next_ms.items() if at <= now_ms]
        for key in fired:
            following = self._next_ms[key] + self._interval_ms[key]
            self._next_ms[key] = (
                following if following > now_ms else now_ms + self._interval_ms[key]
            )
        return fired

    def next_ms(self) -> int | None:
        return min(self._next_ms.values(), default=None)
