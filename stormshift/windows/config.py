"""``Windowing``: how a windowed bolt windows, in Storm 2.x's words.

Frozen data, built with ``with_*`` methods named after Storm's
``BaseWindowedBolt`` (``withTumblingWindow``, ``withWindow``,
``withTimestampField``, ``withLag``, ``withWatermarkInterval``,
``withLateTupleStream``) plus the Dataflow model's additions (sessions,
calendar days, allowed lateness, triggers, accumulation, aggregation, keys).
Durations are integer milliseconds (``*_ms``); counts are ``*_count``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from stormshift.errors import WindowConfigError
from stormshift.windows.aggregation import Aggregation, Collect
from stormshift.windows.assigners import Assigner, CalendarDays, Sessions, Sliding, Tumbling
from stormshift.windows.count import CountWindower
from stormshift.windows.panes import Accumulation
from stormshift.windows.triggers import Trigger
from stormshift.windows.windower import Windower

__all__ = ["Windowing"]


@dataclass(frozen=True)
class Windowing:
    assigner: Assigner | None = None  # time windows
    length_count: int | None = None  # count windows
    slide_count: int | None = None
    timestamp_field: str | None = None
    timestamp_extractor: Callable[[Any], int] | None = None
    lag_ms: int = 0
    watermark_interval_ms: int | None = None
    idle_timeout_ms: int | None = None
    late_tuple_stream: str | None = None
    allowed_lateness_ms: int = 0
    trigger: Trigger = Trigger()  # noqa: RUF009 - frozen, shared on purpose
    accumulation: Accumulation = Accumulation.DISCARDING
    aggregation: Aggregation[Any] = Collect()  # noqa: RUF009 - stateless, shared on purpose
    key_fields: tuple[str, ...] | None = None  # None: the fields grouping's fields

    # -- the window (Storm: withTumblingWindow / withWindow) ------------------
    @classmethod
    def tumbling(cls, *, duration_ms: int | None = None, count: int | None = None,
                 offset_ms: int = 0) -> Windowing:
        if (duration_ms is None) == (count is None):
            raise WindowConfigError("Windowing.tumbling: give exactly one of duration_ms or count")
        if count is not None:
            return cls(length_count=count, slide_count=count)
        assert duration_ms is not None
        return cls(assigner=Tumbling(duration_ms, offset_ms))

    @classmethod
    def sliding(cls, *, length_ms: int | None = None, interval_ms: int | None = None,
                length_count: int | None = None, interval_count: int | None = None,
                offset_ms: int = 0) -> Windowing:
        if length_ms is not None and interval_ms is not None:
            return cls(assigner=Sliding(length_ms, interval_ms, offset_ms))
        if length_count is not None and interval_count is not None:
            return cls(length_count=length_count, slide_count=interval_count)
        raise WindowConfigError("Windowing.sliding: give length_ms and interval_ms, or length_count "
                                "and interval_count (Storm's withWindow(length, interval))")

    @classmethod
    def session(cls, *, gap_ms: int) -> Windowing:
        return cls(assigner=Sessions(gap_ms))

    @classmethod
    def daily(cls, *, zone: str = "UTC",
              zone_of: Callable[[Any], str | None] | None = None) -> Windowing:
        """One window per calendar day, from midnight to midnight in ``zone``, or
        in each key's own zone ``zone_of(key)`` (``zone`` where it returns None)."""
        return cls(assigner=CalendarDays(zone, zone_of))

    # -- event time -----------------------------------------------------------
    def with_timestamp_field(self, name: str) -> Windowing:
        return replace(self, timestamp_field=name, timestamp_extractor=None)

    def with_timestamp_extractor(self, extract: Callable[[Any], int]) -> Windowing:
        """``extract(tup) -> int`` epoch ms (Storm's ``TimestampExtractor``)."""
        return replace(self, timestamp_extractor=extract, timestamp_field=None)

    def with_lag(self, lag_ms: int) -> Windowing:
        return replace(self, lag_ms=lag_ms)

    def with_watermark_interval(self, interval_ms: int) -> Windowing:
        return replace(self, watermark_interval_ms=interval_ms)

    def with_idle_timeout(self, timeout_ms: int) -> Windowing:
        return replace(self, idle_timeout_ms=timeout_ms)

    def with_late_tuple_stream(self, stream: str) -> Windowing:
        return replace(self, late_tuple_stream=stream)

    def with_allowed_lateness(self, lateness_ms: int) -> Windowing:
        return replace(self, allowed_lateness_ms=lateness_ms)

    # -- the Dataflow model ---------------------------------------------------
    def with_trigger(self, trigger: Trigger) -> Windowing:
        return replace(self, trigger=trigger)

    def with_accumulation(self, mode: Accumulation | str) -> Windowing:
        return replace(self, accumulation=Accumulation(mode))

    def with_aggregation(self, aggregation: Aggregation[Any]) -> Windowing:
        return replace(self, aggregation=aggregation)

    def with_key_fields(self, *fields: str) -> Windowing:
        return replace(self, key_fields=tuple(fields))

    # -- derived --------------------------------------------------------------
    @property
    def event_time(self) -> bool:
        """False: processing-time windows (Storm without a timestamp field)."""
        return self.timestamp_field is not None or self.timestamp_extractor is not None

    def check(self, component: str) -> None:
        """Refuse combinations that cannot mean anything, naming the fix."""
        where = f"component {component!r}: windowing"
        if self.assigner is None and self.length_count is None:
            raise WindowConfigError(f"{where} declares no window. Fix: start from "
                                    "Windowing.tumbling(...), .sliding(...), .session(...) or .daily(...)")
        if self.length_count is not None and (self.trigger != Trigger()
                                              or self.allowed_lateness_ms):
                raise WindowConfigError(f"{where}: count windows fire once; triggers and allowed "
                                        "lateness apply to time windows only. Fix: remove them")
        for name in ("lag_ms", "allowed_lateness_ms"):
            if getattr(self, name) < 0:
                raise WindowConfigError(f"{where}: {name} must be >= 0")

    def tick_interval_ms(self) -> int | None:
        """The processing-time period this windowing needs ticks for (None: none)."""
        periods = [self.trigger.processing_interval_ms(), self.watermark_interval_ms,
                   self.idle_timeout_ms]
        if not self.event_time and self.assigner is not None:
            periods.append(1000)  # processing-time windows close on ticks
        found = [p for p in periods if p]
        return min(found) if found else None

    def build_time(self) -> Windower:
        assert self.assigner is not None
        return Windower(self.assigner, trigger=self.trigger, accumulation=self.accumulation,
                        aggregation=self.aggregation,
                        allowed_lateness_ms=self.allowed_lateness_ms)

    def build_count(self) -> CountWindower:
        assert self.length_count is not None and self.slide_count is not None
        return CountWindower(self.length_count, self.slide_count, self.aggregation)
