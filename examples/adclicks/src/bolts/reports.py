"""Plain bolts reading the windowed bolts' emits: the rows the reports print.

Each keeps the latest pane per window and emits one readable row per update,
so a row's last emit per key (``shadow.results`` in the topology declares the
keys) is the window's final result: the minute's CTR, the day's spend.
"""

from datetime import UTC, datetime, timezone
from zoneinfo import ZoneInfo

from adgen import advertiser_zone
from streamparse import Bolt


def minute_label(minute_ms):
    """``2023-11-30 14:05Z``: the UTC minute starting at ``minute_ms``."""
    return datetime.fromtimestamp(minute_ms // 1000, UTC).strftime("%Y-%m-%d %H:%MZ")


def day_label(day_ms, zone):
    """``2023-11-30``: the local date of the midnight ``day_ms`` in ``zone``."""
    return datetime.fromtimestamp(day_ms // 1000, ZoneInfo(zone)).strftime("%Y-%m-%d")


def percent(clicks, impressions):
    return f"{clicks / impressions:.2%}" if impressions else "-"


class MinuteCtrBolt(Bolt):
    """``[ad_id, minute, impressions, ctr, clicks]`` per pane of ``AdCtrPerMinute``."""

    outputs = ["ad_id", "minute", "impressions", "ctr", "clicks"]

    def process(self, tup):
        ad_id, minute_ms, impressions, clicks, _timing = tup.values
        self.emit([ad_id, minute_label(minute_ms), impressions, percent(clicks, impressions),
                   clicks])


class DailySpendBolt(Bolt):
    """``[advertiser_id, day, zone, spend]`` per on-time or late pane of a day."""

    outputs = ["advertiser_id", "day", "zone", "spend"]

    def process(self, tup):
        advertiser_id, day_ms, spend, _timing = tup.values
        zone = advertiser_zone(advertiser_id)
        self.emit([advertiser_id, day_label(day_ms, zone), zone, spend])


class BudgetAlertBolt(Bolt):
    """Logs each budget alert and emits ``[advertiser_id, day, budget, spend]``."""

    outputs = ["advertiser_id", "day", "budget", "spend"]

    def process(self, tup):
        advertiser_id, day_ms, budget, spend = tup.values
        day = day_label(day_ms, advertiser_zone(advertiser_id))
        self.logger.warning("%s reached its daily budget on %s: %d micro-dollars", advertiser_id,
                            day, spend)
        self.emit([advertiser_id, day, budget, spend])


class UserSessionsBolt(Bolt):
    """Per user: ``[user_id, sessions, events, clicks]`` over the user's current sessions
    (a retracted session is removed before its replacement arrives)."""

    outputs = ["user_id", "sessions", "events", "clicks"]

    def initialize(self, conf, ctx):
        self.sessions = {}  # user_id -> {start_ms: [end_ms, events, clicks]}

    def process(self, tup):
        user_id, start_ms, end_ms, events, clicks = tup.values
        mine = self.sessions.setdefault(user_id, {})
        if tup.stream.endswith("_retract"):
            mine.pop(start_ms, None)
        else:
            mine[start_ms] = [end_ms, events, clicks]
        self.emit([user_id, len(mine), sum(s[1] for s in mine.values()),
                   sum(s[2] for s in mine.values())])
