"""Event-time windows: tumbling sums per key (``stormshift.windows``)."""

from conformparts.spouts import RowSpout
from conformparts.stateful import WindowSum
from streamparse import Grouping, Topology


class Windows(Topology):
    config = {"conform.rows": []}
    numbers = RowSpout.spec(par=1)
    windows = WindowSum.spec(inputs={numbers: Grouping.fields("key")}, par=2)
