"""
Ad clicks topology: CTR per ad and spend per advertiser, from the ad-server logs.
"""

from streamparse import Grouping, Topology

from bolts.ctr import AdsCtrBolt
from bolts.parse import ParseBolt
from bolts.spend import ClientSpentBolt
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
    }

    ad_log_spout = AdLogSpout.spec(par=1)
    parse_bolt = ParseBolt.spec(inputs={ad_log_spout: Grouping.SHUFFLE}, par=2)
    ads_ctr_bolt = AdsCtrBolt.spec(inputs={parse_bolt: Grouping.fields("ad_id")}, par=2)
    client_spent_bolt = ClientSpentBolt.spec(
        inputs={parse_bolt: Grouping.fields("advertiser_id")}, par=2
    )
