"""
Ad clicks topology: CTR per ad and spend per advertiser, from the ad-server logs;
and by event time (``adclicks.windows``, on by default): CTR per ad per minute, spend
per advertiser per day in its own time zone (with a budget alert), user sessions.
"""

from streamparse import Grouping, Topology

from bolts.ctr import AdsCtrBolt
from bolts.parse import ParseBolt
from bolts.reports import BudgetAlertBolt, DailySpendBolt, MinuteCtrBolt, UserSessionsBolt
from bolts.spend import ClientSpentBolt
from bolts.windows import AdCtrPerMinute, AdvertiserDailySpend, UserSessions
from spouts.adlog import AdLogSpout


class AdClicks(Topology):
    config = {
        "adclicks.seed": 7,
        "adclicks.events": 200000,
        "adclicks.path": None,
        "adclicks.malformed_rate": 0.0,
        "adclicks.duplicate_rate": 0.01,
        "adclicks.late_rate": 0.02,
        "adclicks.max_replays": 3,
        # the event-time reports (bolts/windows.py); -o adclicks.windows=false: the legacy
        # topology alone (parse_bolt emits nothing on "events", the windowed bolts idle)
        "adclicks.windows": True,
        "adclicks.daily_budget_micros": 250_000_000,  # $250 a day
        # a windowed bolt's results are its emits; its windowing_state (watermarks, counters)
        # is the engine's bookkeeping, kept differently per engine: not compared
        "shadow.state": {"ignore": ["ad_ctr_minute_bolt.windowing_state",
                                    "advertiser_day_bolt.windowing_state",
                                    "user_sessions_bolt.windowing_state"]},
        "shadow.results": {
            "minute_ctr_bolt:default": {"mode": "latest", "key": ["ad_id", "minute"]},
            "daily_spend_bolt:default": {"mode": "latest", "key": ["advertiser_id", "day"]},
            # the spend at the moment of crossing depends on arrival order; the alert does not
            "budget_alert_bolt:default": {"mode": "latest", "key": ["advertiser_id", "day"],
                                          "values": ["budget"]},
        },
    }

    ad_log_spout = AdLogSpout.spec(par=1)
    parse_bolt = ParseBolt.spec(inputs={ad_log_spout: Grouping.SHUFFLE}, par=2)
    ads_ctr_bolt = AdsCtrBolt.spec(inputs={parse_bolt: Grouping.fields("ad_id")}, par=2)
    client_spent_bolt = ClientSpentBolt.spec(
        inputs={parse_bolt: Grouping.fields("advertiser_id")}, par=2
    )

    # event time (stormshift.windows): parse_bolt's "events" stream (adclicks.windows)
    ad_ctr_minute_bolt = AdCtrPerMinute.spec(
        inputs={parse_bolt["events"]: Grouping.fields("ad_id")}, par=2
    )
    advertiser_day_bolt = AdvertiserDailySpend.spec(
        inputs={parse_bolt["events"]: Grouping.fields("advertiser_id")}, par=2
    )
    user_sessions_bolt = UserSessions.spec(
        inputs={parse_bolt["events"]: Grouping.fields("user_id")}, par=2
    )
    # stateless formatting: next to their windowed bolt's task (no shuffle)
    minute_ctr_bolt = MinuteCtrBolt.spec(
        inputs={ad_ctr_minute_bolt: Grouping.LOCAL_OR_SHUFFLE}, par=2
    )
    daily_spend_bolt = DailySpendBolt.spec(
        inputs={advertiser_day_bolt: Grouping.LOCAL_OR_SHUFFLE}, par=2
    )
    budget_alert_bolt = BudgetAlertBolt.spec(
        inputs={advertiser_day_bolt["alerts"]: Grouping.LOCAL_OR_SHUFFLE}, par=2
    )
    # keeps each user's sessions (applies retractions): by user
    user_sessions_report_bolt = UserSessionsBolt.spec(
        inputs={
            user_sessions_bolt: Grouping.fields("user_id"),
            user_sessions_bolt["default_retract"]: Grouping.fields("user_id"),
        },
        par=2,
    )
