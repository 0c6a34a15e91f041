"""Impressions, clicks and spend per ad (for the CTR dashboard)."""

from streamparse import Bolt


class AdsCtrBolt(Bolt):
    """Running totals per ad; emits them after every event."""

    outputs = ["ad_id", "impressions", "clicks", "spend"]

    def initialize(self, conf, ctx):
        self.impressions = {}
        self.clicks = {}
        self.spend = {}  # integer micro-dollars

    def process(self, tup):
        _slot, _advertiser, ad_id, event_type, _user, _event, _ts, cost = tup.values
        if event_type == "click":
            self.clicks[ad_id] = self.clicks.get(ad_id, 0) + 1
        else:
            self.impressions[ad_id] = self.impressions.get(ad_id, 0) + 1
        self.spend[ad_id] = self.spend.get(ad_id, 0) + cost
        self.emit(
            [ad_id, self.impressions.get(ad_id, 0), self.clicks.get(ad_id, 0), self.spend[ad_id]]
        )
