"""adclicks with a spout whose worker is killed once (``faults_storm``'s spout restarts).

The local engine restarts a spout whose ``next_tuple`` raises, as Storm's
supervisor restarts a dead worker. Import this module only with
``examples/adclicks/src`` in use (``faults_storm`` calls ``use_sources``).
"""

from bolts.ctr import AdsCtrBolt
from bolts.parse import ParseBolt
from bolts.spend import ClientSpentBolt
from spouts.adlog import AdLogSpout
from streamparse import Grouping, Topology

KILLED: set[str] = set()  # runs whose spout died already: outlives the instance, like a pid file


class RestartingAdLogSpout(AdLogSpout):
    """Dies before reading line ``faults.kill_at`` (once per ``faults.run``); the
    restarted instance resumes at line ``faults.resume_from`` -- where the source
    says this reader had got to (0 for AdLogSpout itself: it keeps no offsets)."""

    def initialize(self, stormconf, context):
        super().initialize(stormconf, context)
        self.run, self.kill_at = stormconf["faults.run"], stormconf["faults.kill_at"]
        if self.run in KILLED:
            resume = stormconf["faults.resume_from"]
            for _ in range(resume):  # par 1: offset == line number
                next(self.lines)
            self.offset = resume - 1

    def next_tuple(self):
        if self.offset + 1 == self.kill_at and self.run not in KILLED:
            KILLED.add(self.run)
            raise RuntimeError(f"ad log spout worker killed before line {self.kill_at}")
        super().next_tuple()


class AdClicksSpoutRestart(Topology):
    """examples/adclicks/topologies/adclicks.py with the restarting spout."""

    ad_log_spout = RestartingAdLogSpout.spec(par=1)
    parse_bolt = ParseBolt.spec(inputs={ad_log_spout: Grouping.SHUFFLE}, par=2)
    ads_ctr_bolt = AdsCtrBolt.spec(inputs={parse_bolt: Grouping.fields("ad_id")}, par=2)
    client_spent_bolt = ClientSpentBolt.spec(
        inputs={parse_bolt: Grouping.fields("advertiser_id")}, par=2
    )
