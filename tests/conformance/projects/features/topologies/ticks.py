"""Tick tuples: a BatchingBolt and a legacy tick-bucket bolt, behind a fields grouping."""

from conformparts.bolts import Buffer, TickBucket
from conformparts.spouts import BASE, RowSpout
from streamparse import Grouping, Topology


class Ticks(Topology):
    config = {**BASE, "topology.tick.tuple.freq.secs": 1}
    numbers = RowSpout.spec(par=1)
    buffer = Buffer.spec(inputs={numbers: Grouping.fields("key")}, par=2)
    bucket = TickBucket.spec(inputs={numbers: Grouping.fields("key")}, par=2)
