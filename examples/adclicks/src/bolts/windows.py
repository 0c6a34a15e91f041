"""Event-time reports (stormshift.windows): what the dashboard and billing read.

Three windowed bolts fed by ``parse_bolt``'s ``events`` stream, each by event
time (the ``ts`` field), never by the clock of the server processing the line:

- ``AdCtrPerMinute``: impressions and clicks per ad per minute (tumbling
  1 min), an early result every 20 events, the on-time one when the watermark
  passes the minute, then a late update per late record;
- ``AdvertiserDailySpend``: spend per advertiser per calendar day in the
  advertiser's own time zone, and an ``alerts`` tuple the moment a day's spend
  crosses ``adclicks.daily_budget_micros``;
- ``UserSessions``: events and clicks per user session (gap 30 min), a session
  that a late record merges with another retracted on ``default_retract``.

Records arrive up to 3 h late, so windows stay open 4 h after their end
(allowed lateness): every well-formed line lands in its window, as in the
per-ad totals (duplicates included: the legacy semantics).
"""

from adgen import advertiser_zone
from streamparse import Stream

from stormshift.windows import (
    Accumulation,
    SumField,
    Timing,
    Trigger,
    WindowedBolt,
    Windowing,
    with_retractions,
)

LAG_MS = 5_000  # ts jitters up to 5 s behind arrival (out of order)
LATENESS_MS = 4 * 3_600_000  # late records arrive up to 3 h after their ts
SESSION_GAP_MS = 30 * 60_000
DEFAULT_BUDGET_MICROS = 250_000_000  # $250 a day


class ImpressionsClicks:
    """Incremental aggregation: ``(impressions, clicks)`` of the window's events."""

    def init(self):
        return (0, 0)

    def add(self, acc, item):
        if item.value("event_type") == "click":
            return (acc[0], acc[1] + 1)
        return (acc[0] + 1, acc[1])

    def merge(self, a, b):
        return (a[0] + b[0], a[1] + b[1])

    def result(self, acc):
        return acc


class AdCtrPerMinute(WindowedBolt):
    """Per ad and minute of event time: ``[ad_id, minute_ms, impressions, clicks, timing]``,
    each pane holding the minute's totals so far (accumulating)."""

    windowing = (
        Windowing.tumbling(duration_ms=60_000)
        .with_timestamp_field("ts")
        .with_lag(LAG_MS)
        .with_allowed_lateness(LATENESS_MS)
        .with_trigger(Trigger(early_every_count=20))
        .with_accumulation(Accumulation.ACCUMULATING)
        .with_aggregation(ImpressionsClicks())
    )
    outputs = ["ad_id", "minute_ms", "impressions", "clicks", "timing"]

    def process(self, window):
        impressions, clicks = window.result
        self.emit([window.key, window.start_ms, impressions, clicks, window.timing.value])


class AdvertiserDailySpend(WindowedBolt):
    """Per advertiser and local calendar day: ``[advertiser_id, day_ms, spend, timing]`` on
    the on-time and late panes; ``alerts``: ``[advertiser_id, day_ms, budget, spend]`` once,
    on the event that takes the day's spend to the budget or over it."""

    windowing = (
        Windowing.daily(zone_of=advertiser_zone)
        .with_timestamp_field("ts")
        .with_lag(LAG_MS)
        .with_allowed_lateness(LATENESS_MS)
        .with_trigger(Trigger(early_every_count=1))  # a pane per event: the budget check
        .with_accumulation(Accumulation.ACCUMULATING)
        .with_aggregation(SumField("cost"))
    )
    outputs = [
        Stream(["advertiser_id", "day_ms", "spend", "timing"]),
        Stream(["advertiser_id", "day_ms", "budget", "spend"], name="alerts"),
    ]

    def process(self, window):
        budget = self.storm_conf.get("adclicks.daily_budget_micros") or DEFAULT_BUDGET_MICROS
        spend = window.result
        if spend - window.new_result < budget <= spend:
            self.emit([window.key, window.start_ms, budget, spend], stream="alerts")
        if window.timing is not Timing.EARLY:
            self.emit([window.key, window.start_ms, spend, window.timing.value])


class UserSessions(WindowedBolt):
    """Per user session: ``[user_id, start_ms, end_ms, events, clicks]`` (end = last event
    + gap); a pane that replaces an earlier one (a late event, sessions merged) comes after
    the earlier one's values on ``default_retract``."""

    windowing = (
        Windowing.session(gap_ms=SESSION_GAP_MS)
        .with_timestamp_field("ts")
        .with_lag(LAG_MS)
        .with_allowed_lateness(LATENESS_MS)
        .with_accumulation(Accumulation.RETRACTING)
        .with_aggregation(ImpressionsClicks())
    )
    outputs = with_retractions(["user_id", "start_ms", "end_ms", "events", "clicks"])

    def process(self, window):
        impressions, clicks = window.result
        self.emit([window.key, window.start_ms, window.end_ms, impressions + clicks, clicks])
