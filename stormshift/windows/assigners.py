"""Window assigners: which windows an event time belongs to (pure functions).

``assign(event_ms)`` returns the windows, sorted. ``merging`` assigners
(sessions) return one proto-window per element; the windower merges
intersecting windows of a key. All sizes are integer milliseconds; windows
are aligned to ``offset_ms`` after the epoch (UTC), or, for ``CalendarDays``,
to midnight in a time zone (``zoneinfo``; a day is 23 or 25 hours long across
a daylight-saving change). A *keyed* assigner (``keyed = True``: calendar days
whose zone depends on the key, e.g. the advertiser's own zone) is called as
``assign(event_ms, key)``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Protocol
from zoneinfo import ZoneInfo

from stormshift.errors import WindowConfigError
from stormshift.windows.window import Window

__all__ = ["Assigner", "CalendarDays", "Sessions", "Sliding", "Tumbling", "assign"]


class Assigner(Protocol):
    merging: bool

    def assign(self, event_ms: int) -> list[Window]: ...


def assign(assigner: Any, event_ms: int, key: Any) -> list[Window]:
    """The windows of an element of ``key`` (keyed assigners see the key)."""
    if getattr(assigner, "keyed", False):
        return assigner.assign(event_ms, key)  # type: ignore[no-any-return]
    return assigner.assign(event_ms)  # type: ignore[no-any-return]


def _positive(name: str, value: int) -> None:
    if not isinstance(value, int) or value <= 0:
        raise WindowConfigError(f"{name} must be a positive int of milliseconds, got {value!r}")


@dataclass(frozen=True)
class Tumbling:
    """Fixed windows of ``size_ms``: ``[k*size + offset, (k+1)*size + offset)``."""

    size_ms: int
    offset_ms: int = 0
    merging = False

    def __post_init__(self) -> None:
        _positive("size_ms", self.size_ms)

    def assign(self, event_ms: int) -> list[Window]:
        start = event_ms - (event_ms - self.offset_ms) % self.size_ms
        return [Window(start, start + self.size_ms)]


@dataclass(frozen=True)
class Sliding:
    """Windows of ``size_ms`` starting every ``slide_ms``: each event is in
    ``ceil(size / slide)`` of them (fewer when ``slide`` does not divide ``size``)."""

    size_ms: int
    slide_ms: int
    offset_ms: int = 0
    merging = False

    def __post_init__(self) -> None:
        _positive("size_ms", self.size_ms)
        _positive("slide_ms", self.slide_ms)
        if self.slide_ms > self.size_ms:
            raise WindowConfigError(f"slide_ms ({self.slide_ms}) larger than size_ms "
                                    f"({self.size_ms}) leaves gaps no window covers")

    def assign(self, event_ms: int) -> list[Window]:
        last_start = event_ms - (event_ms - self.offset_ms) % self.slide_ms
        windows = []
        start = last_start
        while start > event_ms - self.size_ms:
            windows.append(Window(start, start + self.size_ms))
            start -= self.slide_ms
        return sorted(windows)


@dataclass(frozen=True)
class Sessions:
    """Per key, activity separated by gaps of at least ``gap_ms``: each event
    starts a proto-window ``[t, t + gap)``; intersecting ones merge."""

    gap_ms: int
    merging = True

    def __post_init__(self) -> None:
        _positive("gap_ms", self.gap_ms)

    def assign(self, event_ms: int) -> list[Window]:
        return [Window(event_ms, event_ms + self.gap_ms)]


@dataclass(frozen=True)
class CalendarDays:
    """One window per calendar day in ``zone`` (an IANA name such as
    ``"America/New_York"``): from that day's local midnight to the next.

    With ``zone_of`` (``key -> zone name``) each key has its own zone (an
    advertiser's days in the advertiser's zone); ``zone`` is then the zone of
    keys it returns None for.
    """

    zone: str = "UTC"
    zone_of: Callable[[Any], str | None] | None = None
    merging = False

    def __post_init__(self) -> None:
        ZoneInfo(self.zone)  # an unknown zone fails here, at declaration

    @property
    def keyed(self) -> bool:
        return self.zone_of is not None

    def zone_for(self, key: Any) -> str:
        if self.zone_of is None:
            return self.zone
        return self.zone_of(key) or self.zone

    def assign(self, event_ms: int, key: Any = None) -> list[Window]:
        tz = ZoneInfo(self.zone_for(key))
        # whole seconds decide the date: the milliseconds cannot cross a midnight
        day = datetime.fromtimestamp(event_ms // 1000, tz).date()
        start = datetime(day.year, day.month, day.day, tzinfo=tz)
        end = datetime.combine(day + timedelta(days=1), datetime.min.time(), tzinfo=tz)
        return [Window(_ms(start), _ms(end))]


def _ms(moment: datetime) -> int:
    """Epoch milliseconds of an aware datetime, exactly (no float rounding)."""
    delta = moment - datetime(1970, 1, 1, tzinfo=ZoneInfo("UTC"))
    return (delta.days * 86_400 + delta.seconds) * 1000 + delta.microseconds // 1000
