"""A topology for the pump tests (``tests/test_spout_pump.py``): a spout that records its calls.

Task ``i`` emits ``n = i * STRIDE + j`` for ``j < pump.limit`` (msg id ``n``), one per
``next_tuple``, then raises StopIteration (or, with ``pump.endless``, emits nothing
forever). Every spout method records, in ``CALLS``, which thread called it and how many
spout methods ran at once (``max_inside``: Storm calls a spout from one thread, so 1).
``pump.raise_every`` = k makes every k-th ``next_tuple`` raise ValueError before emitting.
"""

from __future__ import annotations

import threading
import time

from streamparse import Bolt, Grouping, Spout, Topology

from stormshift.spouts.base import task_position

STRIDE = 1_000_000
CALLS: dict = {"inside": 0, "max_inside": 0, "threads": {}, "acked": 0}
_GUARD = threading.Lock()  # guards CALLS only; never held while the spout's method runs


def reset() -> None:
    CALLS.update(inside=0, max_inside=0, threads={}, acked=0)


class _Recorded:
    def __init__(self, name: str):
        self.name = name

    def __enter__(self) -> None:
        with _GUARD:
            CALLS["inside"] += 1
            CALLS["max_inside"] = max(CALLS["max_inside"], CALLS["inside"])
            CALLS["threads"].setdefault(self.name, set()).add(threading.get_ident())

    def __exit__(self, *exc: object) -> None:
        with _GUARD:
            CALLS["inside"] -= 1


class CountingSpout(Spout):
    outputs = ["n"]

    def initialize(self, conf, ctx):
        index, _ = task_position(ctx)
        self.base = index * STRIDE
        self.limit = int(conf.get("pump.limit", 1000))
        self.endless = bool(conf.get("pump.endless", False))
        self.raise_every = int(conf.get("pump.raise_every", 0))
        self.calls = 0
        self.j = 0

    def next_tuple(self):
        with _Recorded("next_tuple"):
            self.calls += 1
            if self.calls % 97 == 0:
                time.sleep(0.0005)  # widen the window for a concurrent call
            if self.raise_every and self.calls % self.raise_every == 0:
                raise ValueError(f"bad record at call {self.calls}")
            if self.j >= self.limit:
                if self.endless:
                    return
                raise StopIteration
            n = self.base + self.j
            self.j += 1
            self.emit([n], tup_id=n)

    def ack(self, tup_id):
        with _Recorded("ack"):
            CALLS["acked"] += 1
            time.sleep(0.00001)

    def fail(self, tup_id):
        with _Recorded("fail"):
            pass

    def deactivate(self):
        with _Recorded("deactivate"):
            pass


class Sink(Bolt):
    def process(self, tup):
        pass


class Pumped(Topology):
    config = {"pump.limit": 1000}
    numbers = CountingSpout.spec(par=2)
    sink = Sink.spec(inputs={numbers: Grouping.SHUFFLE}, par=1)
