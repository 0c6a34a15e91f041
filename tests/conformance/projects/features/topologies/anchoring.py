"""Anchoring and fails: an anchoring splitter, a leaf that fails some of its tuples."""

from conformparts.bolts import Checker, Splitter
from conformparts.spouts import BASE, RowSpout
from streamparse import Grouping, Topology


class Anchoring(Topology):
    config = {**BASE, "stormshift.max_replays": 2}
    numbers = RowSpout.spec(par=1)
    splitter = Splitter.spec(inputs={numbers: Grouping.SHUFFLE}, par=2)
    checker = Checker.spec(inputs={splitter: Grouping.fields("n")}, par=2)
