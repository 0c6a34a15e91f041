"""Components that replay a window scenario on the local engine.

``ScenarioSpout`` (one task per partition) emits the scenario's elements in
their global order, waiting on the engine's SimClock for processing-time
steps; ``ScenarioBolt`` is a ``WindowedBolt`` whose windowing comes from the
scenario (an instance attribute set in ``initialize``: the class attribute is
a placeholder); ``CollectBolt`` is a plain downstream bolt reading its panes,
retractions and late tuples in arrival order.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any, ClassVar
from zoneinfo import ZoneInfo

from streamparse import Bolt, Grouping, Spout, Stream, Topology

from stormshift.engines.local.engine import LocalEngine
from stormshift.engines.local.scheduler import SimClock
from stormshift.topology.loader import load_topology
from stormshift.windows import SumField, TupleWindow, WindowedBolt, Windowing, with_retractions
from support.windows_harness import load, result_of, windowing_of

CLOCKS: dict[str, SimClock] = {}
CURSORS: dict[str, list[int]] = {}
STEPS: dict[str, list[dict[str, Any]]] = {}


class ScenarioSpout(Spout):
    outputs: ClassVar[list[Any]] = ["key", "t", "v"]

    def initialize(self, conf: dict[str, Any], ctx: dict[str, Any]) -> None:
        self.run = conf["fixture.run"]
        mine = sorted(int(t) for t, c in ctx["task->component"].items()
                      if c == ctx["componentid"])
        self.partition = mine.index(ctx["taskid"])

    def next_tuple(self) -> None:
        steps, cursor, clock = STEPS[self.run], CURSORS[self.run], CLOCKS[self.run]
        while cursor[0] < len(steps):
            step = steps[cursor[0]]
            if "processing_ms" in step:
                if clock.now_ms() < step["processing_ms"]:
                    return
                cursor[0] += 1
                continue
            e = step["element"]
            if e.get("p", 0) != self.partition:
                return
            cursor[0] += 1
            self.emit([e["key"], e["t"], e["v"]])
            return
        raise StopIteration


class ScenarioBolt(WindowedBolt):
    windowing = Windowing.tumbling(duration_ms=1000)  # placeholder: see initialize
    outputs: ClassVar[list[Any]] = [
        *with_retractions([Stream(["key", "start", "end", "timing", "index", "result"])]),
        Stream(["key", "t", "v"], name="late"),
    ]

    def initialize(self, conf: dict[str, Any], ctx: dict[str, Any]) -> None:
        self.windowing = windowing_of(load(conf["fixture.scenario"])["windowing"])

    def process(self, window: TupleWindow) -> None:  # type: ignore[override]
        result = result_of(self.windowing, window.result)
        self.emit([window.key, window.start_ms, window.end_ms, window.timing.value,
                   window.index, json.dumps(result)])


class CollectBolt(Bolt):
    outputs: ClassVar[list[Any]] = ["kind", "payload"]

    def process(self, tup: Any) -> None:
        v = list(tup.values)
        if tup.stream == "late":
            self.emit(["late", json.dumps({"key": v[0], "t": v[1], "v": v[2]})])
            return
        key, start, end, timing, index, result = v
        if tup.stream == "default_retract":
            payload = {"key": key, "window": [start, end], "result": json.loads(result)}
            self.emit(["retract", json.dumps(payload)])
            return
        self.emit(["pane", json.dumps({"pane": timing, "key": key, "window": [start, end],
                                       "index": index, "result": json.loads(result)})])


def topology(partitions: int, tick_ms: int, bolt_par: int = 1) -> Any:
    spout = ScenarioSpout.spec(name="events", par=partitions)
    windows = ScenarioBolt.spec(
        name="windows", par=bolt_par, inputs={spout: Grouping.fields("key")},
        config={"topology.tick.tuple.freq.secs": tick_ms / 1000})
    collect = CollectBolt.spec(name="collect", inputs=[
        windows["default"], windows["default_retract"], windows["late"]])
    return type("ScenarioTopology", (Topology,), {"events": spout, "windows": windows,
                                                   "collect": collect})


def run_local(name: str, steps: list[dict[str, Any]] | None = None, bolt_par: int = 1
              ) -> tuple[list[dict[str, Any]], dict[str, int]]:
    scenario = load(name)
    tick_ms = scenario.get("tick_ms", 1000)
    run = f"{name}-{len(CLOCKS)}"
    CLOCKS[run] = clock = SimClock(ms_per_round=0)
    CURSORS[run] = [0]
    STEPS[run] = scenario["steps"] if steps is None else steps
    graph = load_topology(topology(scenario.get("partitions", 1), tick_ms, bolt_par))
    engine = LocalEngine(graph, clock=clock, conf_overrides={
        "fixture.scenario": name, "fixture.run": run,
        "topology.sleep.spout.wait.strategy.time.ms": tick_ms,
        "stormshift.idle_timeout_secs": 10**6})
    summary = engine.run()
    return collected(summary)


# -- billing by event time in the advertiser's zone (the month-boundary click) --------
class ClickSpout(Spout):
    """Emits ``fixture.clicks`` ([advertiser, ts ms, cost]) in that order, then ends."""

    outputs: ClassVar[list[Any]] = ["advertiser", "ts", "cost"]

    def initialize(self, conf: dict[str, Any], ctx: dict[str, Any]) -> None:
        self.rows = list(conf["fixture.clicks"])

    def next_tuple(self) -> None:
        if not self.rows:
            raise StopIteration
        self.emit(self.rows.pop(0))


class DailySpend(WindowedBolt):
    """Spend per advertiser per calendar day in Los Angeles, by event time."""

    windowing = (Windowing.daily(zone="America/Los_Angeles").with_timestamp_field("ts")
                 .with_lag(5_000).with_aggregation(SumField("cost")))
    outputs: ClassVar[list[Any]] = ["advertiser", "day_start_ms", "spend"]

    def process(self, window: TupleWindow) -> None:  # type: ignore[override]
        self.emit([window.key, window.start_ms, window.result])


class MonthlyBill(Bolt):
    """A plain bolt downstream: daily spend rolled up per local month."""

    outputs: ClassVar[list[Any]] = ["advertiser", "month", "spend"]

    def initialize(self, conf: dict[str, Any], ctx: dict[str, Any]) -> None:
        self.bills: dict[tuple[str, str], float] = {}

    def process(self, tup: Any) -> None:
        zone = ZoneInfo("America/Los_Angeles")
        day = datetime.fromtimestamp(tup.values.day_start_ms // 1000, zone)
        key = (tup.values.advertiser, f"{day:%Y-%m}")
        self.bills[key] = self.bills.get(key, 0) + tup.values.spend

    def end_of_input(self) -> None:  # a plain bolt may use the hook too
        for (advertiser, month), spend in sorted(self.bills.items()):
            self.emit([advertiser, month, spend])


class BillingTopology(Topology):
    clicks = ClickSpout.spec()
    daily = DailySpend.spec(inputs={clicks: Grouping.fields("advertiser")}, par=2)
    monthly = MonthlyBill.spec(inputs={daily: Grouping.fields("advertiser")})



# -- probes: one windowed bolt, windowing picked by ``fixture.windowing`` --------------
WINDOWINGS: dict[str, Windowing] = {
    "count3": Windowing.tumbling(count=3),
    "sliding_count4by2": Windowing.sliding(length_count=4, interval_count=2),
    "count2_event_time": Windowing.tumbling(count=2).with_timestamp_field("ts").with_lag(10)
    .with_late_tuple_stream("late"),
    "processing_time": Windowing.tumbling(duration_ms=2000),
    "sliding_expired": Windowing.sliding(length_ms=20, interval_ms=10).with_timestamp_field("ts"),
    "timers": Windowing.tumbling(duration_ms=10).with_timestamp_field("ts"),
    "undeclared_late": Windowing.tumbling(duration_ms=10).with_timestamp_field("ts")
    .with_late_tuple_stream("nowhere"),
    "sum_get": Windowing.tumbling(duration_ms=10).with_timestamp_field("ts")
    .with_aggregation(SumField("cost")),
}


class ProbeBolt(WindowedBolt):
    windowing = Windowing.tumbling(duration_ms=1000)  # placeholder: see initialize
    outputs: ClassVar[list[Any]] = [
        Stream(["key", "start", "end", "timing", "costs", "new", "expired"]),
        Stream(["key", "at"], name="timer"),
        Stream(["advertiser", "ts", "cost"], name="late"),
    ]

    def initialize(self, conf: dict[str, Any], ctx: dict[str, Any]) -> None:
        self.windowing = WINDOWINGS[conf["fixture.windowing"]]

    def process(self, window: TupleWindow) -> None:  # type: ignore[override]
        def costs(tuples: Any) -> str:
            return json.dumps([t.value("cost") for t in tuples])

        if self.storm_conf["fixture.windowing"] == "timers":
            self.set_event_timer(window.key, window.end_ms + 15, "after")
        self.emit([window.key, window.start_ms, window.end_ms, window.timing.value,
                   costs(window.get()), costs(window.get_new()), costs(window.get_expired())])

    def on_timer(self, key: Any, at_ms: int, tag: str) -> None:
        self.emit([key, at_ms], stream="timer")


def run_probe(windowing: str, clicks: list[list[Any]], tick_secs: float | None = None,
              spout_wait_ms: int = 1) -> Any:
    config = None if tick_secs is None else {"topology.tick.tuple.freq.secs": tick_secs}
    spout = ClickSpout.spec(name="clicks")
    probe = ProbeBolt.spec(name="probe", inputs={spout: Grouping.fields("advertiser")},
                           config=config)
    topo = type("ProbeTopology", (Topology,), {"clicks": spout, "probe": probe})
    engine = LocalEngine(load_topology(topo), clock=SimClock(), conf_overrides={
        "fixture.clicks": clicks, "fixture.windowing": windowing,
        "topology.sleep.spout.wait.strategy.time.ms": spout_wait_ms})
    return engine.run()


def collected(summary: Any) -> tuple[list[Any], dict[str, int]]:
    """A clean run's ``collect`` sink (panes, and late tuples as ``{kind: item}``) and the
    ``windows`` bolt's on-time / late-updated / dropped-late counts."""
    problems = [k.headline() for k in summary.problems.kinds()]
    assert not problems, problems
    out = []
    for kind, payload in summary.output("collect", "default"):
        item = json.loads(payload)
        out.append(item if kind == "pane" else {kind: item})
    counters = summary.components["windows"].windows
    return out, {k: counters.get(k, 0) for k in ("on_time", "late_updated", "dropped_late")}
