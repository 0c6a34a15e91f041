"""Every Storm grouping, named streams and a direct stream, fed by one spout."""

from conformparts.bolts import Director, Seen
from conformparts.spouts import BASE, RowSpout
from streamparse import Grouping, Topology


class Groupings(Topology):
    config = dict(BASE)
    numbers = RowSpout.spec(par=1)
    shuffle_seen = Seen.spec(inputs={numbers: Grouping.SHUFFLE}, par=2)
    fields_seen = Seen.spec(inputs={numbers: Grouping.fields("key")}, par=3)
    all_seen = Seen.spec(inputs={numbers: Grouping.ALL}, par=2)
    global_seen = Seen.spec(inputs={numbers: Grouping.GLOBAL}, par=2)
    none_seen = Seen.spec(inputs={numbers: Grouping.NONE}, par=2)
    director = Director.spec(inputs={numbers: Grouping.SHUFFLE}, par=2)
    local_seen = Seen.spec(inputs={director["even"]: Grouping.LOCAL_OR_SHUFFLE}, par=2)
    odd_seen = Seen.spec(inputs={director["odd"]: Grouping.fields("n")}, par=2)
    direct_seen = Seen.spec(inputs={director["direct"]: Grouping.DIRECT}, par=2)
