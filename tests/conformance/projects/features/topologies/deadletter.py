"""Dead letters: a bolt that raises on poison tuples."""

from conformparts.bolts import Poison
from conformparts.spouts import BASE, RowSpout
from streamparse import Grouping, Topology


class DeadLetter(Topology):
    config = {**BASE, "stormshift.max_replays": 2}
    numbers = RowSpout.spec(par=1)
    poison = Poison.spec(inputs={numbers: Grouping.fields("key")}, par=2)
