"""Components that use stormshift's own features: keyed state maps and an event-time
windowed bolt (a port would write these; a legacy topology has neither)."""

from __future__ import annotations

from streamparse import Bolt

import stormshift.state
from stormshift.windows import SumField, TupleWindow, WindowedBolt, Windowing

WINDOW_MS = 10


class MapSum(Bolt):
    """Keyed maps: the sum of n per key in an opaque map, the count in a transactional map,
    the last n seen in a plain map (``put``); emits (key, sum so far)."""

    outputs = ["key", "total"]

    def initialize(self, conf, ctx):
        self.sums = stormshift.state.opaque_map("sums")
        self.counts = stormshift.state.transactional_map("counts")
        self.last = stormshift.state.plain_map("last")

    def process(self, tup):
        n, key = tup.values
        self.sums.increment(key, n)
        self.counts.increment(key, 1)
        self.last.put(key, n)
        self.emit([key, self.sums.get(key)])


class WindowSum(WindowedBolt):
    """Tumbling event-time windows of WINDOW_MS over ``n`` (event time in ms), per key;
    emits (key, start, end, sum of n)."""

    windowing = (Windowing.tumbling(duration_ms=WINDOW_MS).with_timestamp_field("n")
                 .with_key_fields("key").with_aggregation(SumField("n")))
    outputs = ["key", "start", "end", "sum"]

    def process(self, window: TupleWindow) -> None:  # type: ignore[override]
        self.emit([window.key, window.start_ms, window.end_ms, window.result])


class SlidingSum(WindowSum):
    """Sliding event-time windows of 2 x WINDOW_MS every WINDOW_MS, per key: each n is in
    two windows; emits (key, start, end, sum of n)."""

    windowing = (Windowing.sliding(length_ms=2 * WINDOW_MS, interval_ms=WINDOW_MS)
                 .with_timestamp_field("n").with_key_fields("key")
                 .with_aggregation(SumField("n")))
