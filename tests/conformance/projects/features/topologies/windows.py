"""Event-time windows: tumbling and sliding sums per key (``stormshift.windows``)."""

from conformparts.spouts import BASE, RowSpout
from conformparts.stateful import SlidingSum, WindowSum
from streamparse import Grouping, Topology


class Windows(Topology):
    config = dict(BASE)
    numbers = RowSpout.spec(par=1)
    windows = WindowSum.spec(inputs={numbers: Grouping.fields("key")}, par=2)
    sliding = SlidingSum.spec(inputs={numbers: Grouping.fields("key")}, par=1)
