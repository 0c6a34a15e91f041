"""What Storm does under the Spark fault suite's faults: the legacy column of its table.

``storm_side(fault, events=, seed=, topology=)`` runs the unchanged example on
the local engine (Storm semantics, in-process, simulated clock) with the
Storm failure that hits the same tuples at the same point of their path as
the Spark fault in ``tests/test_faults.py``, then compares the bolts' final
running totals (their last emit per key: what the CTR dashboard and billing
read) with the independent computation (``examples/adclicks/expected.py``;
wordcount's cycle of words by hand). Storm has no batches: a fault hits the
tuples in flight, here one *batch* of B = events // 6 lines, placed as the
suite places its fault (in batch 2: lines [2B, 3B)). A driver kill in Spark
takes every process down; on Storm the question is what became of the tuples it caught, so each row below picks
the point of their path the Spark fault stops them at.

| Spark fault | Storm analogue injected (adclicks) |
| --- | --- |
| driver-before-stages | batch 2's lines are lost before any bolt ran them (the worker queueing them dies): ``FailTuples(parse_bolt, before=True)``; their trees fail, AdLogSpout replays them: exact |
| driver-between-stages | parsed, then lost on the way to both counters: ``FailTuples(before=True)`` on both: exact |
| driver-after-commit | both counters updated their totals, the acks never reach the acker (the worker dies; they time out): ``FailTuples(client_spent_bolt, before=False)``; the replay is counted again by both |
| driver-during-wal-append | the spout's worker dies having emitted up to 3B; the restarted spout resumes where its source offset was last committed (storm-kafka-client commits acked offsets periodically): one batch back, so batch 2 is counted twice |
| worker-mid-task | ads_ctr_bolt task 1's worker is killed at 3.5B (``CrashTask``): its totals are gone; tuples sent to it until it is back (to 4B) are lost (``FailTuples(before=True)``), time out and replay, and billing counts them twice |
| redis-restart-between-batches, redis-restart-mid-batch | none: the bolts keep their state in memory; Redis is not in their path, so the run is the failure-free one |
| zombie-attempt | ads_ctr_bolt task 0 is partitioned during batch 2 and Nimbus reassigns it: the successor starts empty and the tuples sent to the zombie time out and replay (as worker-mid-task) |
| speculation | Storm has no speculative attempts; a slow first attempt is a slow task: what ads_ctr_bolt task 0 processed of batch 2 after the message timeout was already failed and replayed, so both executions count (``FailTuples(before=False)``) |
| spout-reemit | the spout restarted at 4B re-emits from line 0 with the same msg ids (AdLogSpout keeps no offsets; Storm has no msg-id dedup) |

wordcount's WordSpout is unreliable (no msg ids): Storm never replays it, so
it never double counts. Tuples lost before ``count_bolt`` (driver-before- /
between-stages) and a dead task's counter (worker-mid-task, zombie-attempt)
are lost for good; faults on the ack path (driver-after-commit, speculation)
change nothing; the spout has no position to rewind (driver-during-wal-append,
spout-reemit) and Redis is not in its path: those return the failure-free run.

``tests/test_faults_storm.py`` pins these outcomes; ``tests/test_faults.py``
prints them beside the Spark engine's result for the same fault.
"""

from __future__ import annotations

import importlib
import importlib.util
import itertools
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from stormshift.adapters.routing import stable_hash
from stormshift.engines.local import CrashTask, FailTuples, LocalEngine, SimClock
from stormshift.topology.loader import load_topology
from stormshift.topology.sources import use_sources

__all__ = ["FAULTS", "StormResult", "Totals", "storm_side"]

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
FAULTS = (
    "driver-before-stages",
    "driver-between-stages",
    "driver-after-commit",
    "driver-during-wal-append",
    "worker-mid-task",
    "redis-restart-between-batches",
    "redis-restart-mid-batch",
    "zombie-attempt",
    "speculation",
    "spout-reemit",
)
TIMEOUT_SECS = 5  # topology.message.timeout.secs (simulated time: costs nothing)
WORDS = ("dog", "cat", "zebra", "elephant")  # examples/wordcount WordSpout's cycle
COUNTERS = (("ads_ctr_bolt", "ad_id"), ("client_spent_bolt", "advertiser_id"))
_RUNS = itertools.count()


@dataclass(frozen=True)
class Totals:
    """Final totals. ``per_key``: ad -> (impressions, clicks) or word -> (count,);
    ``events``: events counted per key; ``spend``: advertiser -> micro-dollars."""

    per_key: dict[str, tuple[int, ...]]
    events: dict[str, int]
    spend: dict[str, int]


@dataclass(frozen=True)
class StormResult:
    """One fault on the local engine.

    ``double_by_view``: events counted more than once, per counting bolt: for
    the per-key bolt (ads_ctr_bolt, count_bolt) the final totals over the
    expected ones, summed over keys; billing's totals are money, so for
    client_spent_bolt it is the events it executed again (the engine's
    lineage ``duplicates``: exact, as billing never restarts here).
    ``double_counted`` is the larger of them (an event double counted in both
    views is one event). ``lost``: events the per-key totals miss.
    ``overbilled`` / ``underbilled``: micro-dollars over / under, summed over
    advertisers.
    """

    fault: str
    topology: str
    analogue: str
    expected: Totals
    observed: Totals
    double_counted: int
    lost: int
    double_by_view: dict[str, int]
    overbilled: int
    underbilled: int
    injected: tuple[str, ...]
    replays: int


def storm_side(
    fault: str, *, events: int, seed: int, topology: str = "adclicks", malformed_rate: float = 0.0
) -> StormResult:
    """Run ``topology`` under Storm's analogue of ``fault`` (module doc) and measure it."""
    if fault not in FAULTS:
        raise ValueError(f"faults_storm: unknown fault {fault!r}; faults are {list(FAULTS)}")
    if events < 60:
        raise ValueError(f"faults_storm: events must be >= 60 (6 batches of 10), got {events}")
    if topology == "adclicks":
        return _adclicks(fault, events, seed, malformed_rate)
    if topology == "wordcount":
        return _wordcount(fault, events, seed)
    raise ValueError(f"faults_storm: topology must be adclicks or wordcount, got {topology!r}")


# -- adclicks ---------------------------------------------------------------------
def _expected_module() -> Any:
    name = "adclicks_expected"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, EXAMPLES / "adclicks" / "expected.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module  # dataclasses look their module up
        spec.loader.exec_module(module)
    return sys.modules[name]


class _Day:
    """The day's lines, and which tuples a fault selects (by event id, so replays differ)."""

    def __init__(self, seed: int, events: int, malformed_rate: float) -> None:
        self.oracle = _expected_module()
        lines = self.oracle.generated_lines(seed, events, malformed_rate=malformed_rate)
        self.lines = list(lines)
        self.records = [self.oracle.parse_record(line) for line in self.lines]

    def first_ids(self, lo: int, hi: int, field: str | None = None, task: int = 0) -> set[str]:
        """Event ids first seen in lines [lo, hi) (routed to ``task`` by ``field`` if given)."""
        seen: set[str] = set()
        out: set[str] = set()
        for i, rec in enumerate(self.records[:hi]):
            if rec is None:
                continue
            if i >= lo and rec["event_id"] not in seen and _routed(rec, field, task):
                out.add(rec["event_id"])
            seen.add(rec["event_id"])
        return out

    def crash_point(self, lo: int, field: str, task: int) -> tuple[int, int]:
        """(1-based delivery number at ``task``, line) of its first tuple at or after ``lo``."""
        ok = [i for i, rec in enumerate(self.records) if rec is not None and _routed(rec, field, task)]
        before = sum(1 for i in ok if i < lo)
        return before + 1, ok[before]


def _routed(rec: dict[str, Any], field: str | None, task: int) -> bool:
    """fields grouping over par 2, as the engine routes it."""
    return field is None or stable_hash([rec[field]]) % 2 == task


class _FirstDelivery:
    """Selects a chosen event's first delivery only: not its replay, not a later client retry."""

    def __init__(self, ids: set[str], oracle: Any = None) -> None:
        self.ids, self.oracle, self.fired = ids, oracle, set()

    def __call__(self, tup: Any) -> bool:
        if self.oracle is not None:  # parse_bolt: the raw line
            rec = self.oracle.parse_record(tup.values[0])
            eid = rec["event_id"] if rec else None
        else:
            eid = tup.values[5]
        if eid in self.ids and eid not in self.fired:
            self.fired.add(eid)
            return True
        return False


def _adclicks_plan(fault: str, day: _Day, b: int) -> tuple[list[Any], tuple[int, int] | None]:
    """(local-engine faults, spout restart as (kill before line, resume at line) or None)."""
    batch2 = day.first_ids(2 * b, 3 * b)
    if fault == "driver-before-stages":
        return [FailTuples("parse_bolt", predicate=_FirstDelivery(batch2, day.oracle), before=True)], None
    if fault == "driver-between-stages":
        return [FailTuples(c, predicate=_FirstDelivery(batch2), before=True) for c, _ in COUNTERS], None
    if fault == "driver-after-commit":
        return [FailTuples("client_spent_bolt", predicate=_FirstDelivery(batch2))], None
    if fault == "driver-during-wal-append":
        return [], (3 * b, 2 * b)
    if fault == "worker-mid-task":
        return _crash(day, "ads_ctr_bolt", "ad_id", 1, 3 * b + b // 2, 4 * b), None
    if fault == "zombie-attempt":
        return _crash(day, "ads_ctr_bolt", "ad_id", 0, 2 * b, 3 * b), None
    if fault == "speculation":
        slow = day.first_ids(2 * b, 3 * b, "ad_id", 0)
        return [FailTuples("ads_ctr_bolt", predicate=_FirstDelivery(slow))], None
    if fault == "spout-reemit":
        return [], (4 * b, 0)
    return [], None  # redis-restart-*: nothing of Storm's is in Redis


def _crash(day: _Day, component: str, field: str, task: int, lo: int, hi: int) -> list[Any]:
    """The task dies at its first tuple from ``lo``; what is sent to it until ``hi`` is lost."""
    at, line = day.crash_point(lo, field, task)
    dropped = _FirstDelivery(day.first_ids(line + 1, hi, field, task))
    return [CrashTask(component, task, at), FailTuples(component, predicate=dropped, before=True)]


def _restart_topology() -> type:
    """``support.faults_storm_topology.AdClicksSpoutRestart``, imported against adclicks' src/."""
    src = EXAMPLES / "adclicks" / "src"
    use_sources([str(src.resolve())])
    for name in ("spouts.adlog", "bolts.parse", "bolts.ctr", "bolts.spend"):
        importlib.import_module(name)
    module = importlib.import_module("support.faults_storm_topology")
    return module.AdClicksSpoutRestart  # type: ignore[no-any-return]


def _adclicks(fault: str, events: int, seed: int, malformed_rate: float) -> StormResult:
    day, b = _Day(seed, events, malformed_rate), events // 6
    plan, restart = _adclicks_plan(fault, day, b)
    conf: dict[str, Any] = {
        "adclicks.seed": seed,
        "adclicks.events": events,
        "adclicks.malformed_rate": malformed_rate,
        "topology.message.timeout.secs": TIMEOUT_SECS,
        # the legacy topology as Storm ran it: the event-time reports are stormshift's
        # WindowedBolts (never on Storm), and the column compares billing's totals only
        "adclicks.windows": False,
    }
    if restart is None:
        graph = load_topology(EXAMPLES / "adclicks", name="adclicks", overrides=conf)
    else:
        run = f"{fault}-{next(_RUNS)}"
        conf.update({"faults.run": run, "faults.kill_at": restart[0], "faults.resume_from": restart[1]})
        graph = load_topology(_restart_topology(), overrides=conf)
    engine = LocalEngine(graph, clock=SimClock(), seed=seed, faults=plan)
    summary = engine.run()
    _check_drained(fault, summary)
    want = day.oracle.compute(day.lines)
    expected = _ad_totals(
        {ad: (t.impressions, t.clicks) for ad, t in want.ctr_by_ad.items()}, want.spend_by_advertiser
    )
    observed = _ad_totals(
        {ad: (v[1], v[2]) for ad, v in summary.latest("ads_ctr_bolt").items()},
        {adv: v[1] for adv, v in summary.latest("client_spent_bolt").items()},
    )
    billing = summary["client_spent_bolt"]
    assert billing.restarts == 0, "faults_storm: billing's duplicates are exact only without restarts"
    views = {"client_spent_bolt": billing.duplicates}
    return _result(fault, "adclicks", expected, observed, engine, summary["ad_log_spout"].replays, views)


def _ad_totals(per_ad: dict[str, tuple[int, int]], spend: dict[str, int]) -> Totals:
    return Totals(per_ad, {ad: i + c for ad, (i, c) in per_ad.items()}, dict(spend))


# -- wordcount ----------------------------------------------------------------------
def _wordcount_plan(fault: str, b: int, events: int) -> list[Any]:
    window = range(2 * b + 1, 3 * b + 1)  # 1-based deliveries to count_bolt = emitted words
    if fault in ("driver-before-stages", "driver-between-stages"):
        return [FailTuples("count_bolt", indexes=frozenset(window), before=True)]
    if fault in ("driver-after-commit", "speculation"):  # no tree: the fail goes nowhere
        return [FailTuples("count_bolt", indexes=frozenset(window))]
    if fault in ("worker-mid-task", "zombie-attempt"):
        task, lo, hi = (0, 3 * b + b // 2, 4 * b) if fault == "worker-mid-task" else (1, 2 * b, 3 * b)
        mine = [i for i in range(events) if stable_hash([WORDS[i % 4]]) % 2 == task]
        before = sum(1 for i in mine if i < lo)
        dropped = frozenset(i + 1 for i in mine[before + 1 :] if i < hi)
        faults: list[Any] = [CrashTask("count_bolt", task, before + 1)]
        return faults + ([FailTuples("count_bolt", indexes=dropped, before=True)] if dropped else [])
    return []  # no msg ids, no source position, nothing in Redis


def _wordcount(fault: str, events: int, seed: int) -> StormResult:
    graph = load_topology(
        EXAMPLES / "wordcount",
        name="wordcount",
        overrides={"topology.message.timeout.secs": TIMEOUT_SECS},
    )
    engine = LocalEngine(
        graph, clock=SimClock(), seed=seed, faults=_wordcount_plan(fault, events // 6, events)
    )
    summary = engine.run(max_tuples=events)
    _check_drained(fault, summary)
    weight = {w: 10 if w == "dog" else 1 for w in WORDS}  # WordCountBolt counts a dog 10 times
    emitted = Counter(WORDS[i % 4] for i in range(events))
    expected = Totals({w: (n * weight[w],) for w, n in emitted.items()}, dict(emitted), {})
    final = {w: v[1] for w, v in summary.latest("count_bolt").items()}
    observed = Totals({w: (n,) for w, n in final.items()}, {w: n // weight[w] for w, n in final.items()}, {})
    return _result(fault, "wordcount", expected, observed, engine, summary["word_spout"].replays, {})


# -- both ---------------------------------------------------------------------------
def _check_drained(fault: str, summary: Any) -> None:
    if summary.pending_trees or not summary.stop_reason.startswith(("sources exhausted", "max_tuples")):
        raise RuntimeError(
            f"faults_storm {fault}: the local run did not finish cleanly ({summary.stop_reason}, "
            f"{summary.pending_trees} trees pending); raise the drain or check the fault plan"
        )


def _over_under(expected: dict[str, int], observed: dict[str, int]) -> tuple[int, int]:
    keys = expected.keys() | observed.keys()
    diffs = [observed.get(k, 0) - expected.get(k, 0) for k in keys]
    return sum(d for d in diffs if d > 0), -sum(d for d in diffs if d < 0)


def _result(
    fault: str,
    topology: str,
    expected: Totals,
    observed: Totals,
    engine: LocalEngine,
    replays: int,
    views: dict[str, int],
) -> StormResult:
    double, lost = _over_under(expected.events, observed.events)
    views = {"ads_ctr_bolt" if topology == "adclicks" else "count_bolt": double, **views}
    over, under = _over_under(expected.spend, observed.spend)
    return StormResult(
        fault=fault,
        topology=topology,
        analogue=_analogue(fault, topology),
        expected=expected,
        observed=observed,
        double_counted=max(views.values()),
        lost=lost,
        double_by_view=views,
        overbilled=over,
        underbilled=under,
        injected=tuple(engine.injected),
        replays=replays,
    )


def _analogue(fault: str, topology: str) -> str:
    """One line per fault for tables (the module doc has the reasons)."""
    if topology == "wordcount":
        return {
            "driver-before-stages": "words lost before count_bolt; unreliable spout: gone",
            "driver-between-stages": "words lost before count_bolt; unreliable spout: gone",
            "worker-mid-task": "count_bolt task 0 killed: its Counter is gone, nothing replays",
            "zombie-attempt": "count_bolt task 1 partitioned and reassigned: its Counter is gone",
        }.get(fault, "no Storm failure miscounts here (no acks, no position, no Redis)")
    return {
        "driver-before-stages": "lines lost before parse_bolt; replayed once",
        "driver-between-stages": "parsed tuples lost before both counters; replayed once",
        "driver-after-commit": "counted, ack lost; replayed and counted again",
        "driver-during-wal-append": "spout worker killed; resumes a batch back",
        "worker-mid-task": "ads_ctr_bolt task 1 killed mid-batch; state lost, replays",
        "redis-restart-between-batches": "none: Storm's state is in memory",
        "redis-restart-mid-batch": "none: Storm's state is in memory",
        "zombie-attempt": "ads_ctr_bolt task 0 partitioned, reassigned empty; replays",
        "speculation": "slow ads_ctr_bolt task: timed out, replayed, counted twice",
        "spout-reemit": "spout restarted, re-emits from line 0; no msg-id dedup",
    }[fault]
