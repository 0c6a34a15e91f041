"""A windowed bolt whose ``par`` changes mid-run (``test_spark_rescale_windows.py``).

``Lines`` replays ``{"n", "key", "t"}`` lines from ``jsonlines.path`` (event time ``t``);
``KeyWindows`` counts each key's tuples per 10 ms of event time (an incremental
aggregation, allowed lateness 20 ms, lag 5 ms) and emits one row per pane. ``ByKey2`` /
``ByKey3`` feed it with a fields grouping on ``key`` at par 2 / 3; ``Shuffled2`` /
``Shuffled3`` with a shuffle grouping (one global window set per task: not rescalable).
"""

from __future__ import annotations

from typing import Any, ClassVar

from streamparse import Grouping, Topology

from stormshift.spouts.jsonlines import JsonLinesSpout
from stormshift.windows import Count, TupleWindow, WindowedBolt, Windowing

CONFIG = {"jsonlines.fields": ["n", "key", "t"], "jsonlines.bounded": True}


class Lines(JsonLinesSpout):
    outputs: ClassVar[list[Any]] = ["n", "key", "t"]


class KeyWindows(WindowedBolt):
    windowing = (Windowing.tumbling(duration_ms=10).with_timestamp_field("t").with_lag(5)
                 .with_allowed_lateness(20).with_aggregation(Count()))
    outputs: ClassVar[list[Any]] = ["key", "start", "end", "timing", "index", "count"]

    def process(self, window: TupleWindow) -> None:  # type: ignore[override]
        self.emit([window.key, window.start_ms, window.end_ms, window.timing.value,
                   window.index, window.result])


def _topology(name: str, grouping: Any, par: int) -> Any:
    lines = Lines.spec(name="lines", par=1)
    windows = KeyWindows.spec(name="windows", inputs={lines: grouping}, par=par)
    return type(name, (Topology,), {"config": dict(CONFIG), "lines": lines, "windows": windows,
                                    "__module__": __name__})


ByKey2 = _topology("ByKey2", Grouping.fields("key"), 2)
ByKey3 = _topology("ByKey3", Grouping.fields("key"), 3)
Shuffled2 = _topology("Shuffled2", Grouping.SHUFFLE, 2)
Shuffled3 = _topology("Shuffled3", Grouping.SHUFFLE, 3)
