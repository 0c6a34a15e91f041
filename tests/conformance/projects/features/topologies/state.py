"""State kinds: a legacy bolt's snapshot dict state, and keyed state maps."""

from conformparts.bolts import KeySum
from conformparts.spouts import BASE, RowSpout
from conformparts.stateful import MapSum
from streamparse import Grouping, Topology


class SnapshotState(Topology):
    config = dict(BASE)
    numbers = RowSpout.spec(par=1)
    sums = KeySum.spec(inputs={numbers: Grouping.fields("key")}, par=2)


class KeyedMaps(Topology):
    config = dict(BASE)
    numbers = RowSpout.spec(par=1)
    maps = MapSum.spec(inputs={numbers: Grouping.fields("key")}, par=2)
