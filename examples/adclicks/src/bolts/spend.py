"""Spend per advertiser (what billing invoices)."""

from streamparse import Bolt


class ClientSpentBolt(Bolt):
    """Running spend per advertiser; emits it after every event."""

    outputs = ["advertiser_id", "spend"]

    def initialize(self, conf, ctx):
        self.spend = {}  # integer micro-dollars

    def process(self, tup):
        advertiser_id = tup.values[1]
        cost = tup.values[7]
        self.spend[advertiser_id] = self.spend.get(advertiser_id, 0) + cost
        self.emit([advertiser_id, self.spend[advertiser_id]])
