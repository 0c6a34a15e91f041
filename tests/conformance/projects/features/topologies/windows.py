"""Event-time windows: tumbling sums per key (``stormshift.windows``)."""

from conformparts.spouts import BASE, RowSpout
from conformparts.stateful import WindowSum
from streamparse import Grouping, Topology


class Windows(Topology):
    config = dict(BASE)
    numbers = RowSpout.spec(par=1)
    windows = WindowSum.spec(inputs={numbers: Grouping.fields("key")}, par=2)
