"""Runs a conformance scenario on one engine and reduces the run to the oracle's views.

A scenario (``scenarios/NAME.json``) names a topology of the project under
``projects/features`` (``NAME`` or ``FILE:Class``), its input (``count`` rows
``[n, "k{n % keys}"]``), the oracle that computes the expected results
(``oracle.ORACLES``), the checks to compare, optionally ``config`` (topology config
overrides, e.g. where a spout runs), and optionally ``xfail``:
``{engine: reason}`` for a known divergence of one engine (run strict: a fix makes it fail).

A check is ``"component:stream VIEW"`` over a leaf stream (``VIEWS``),
``"component attr:NAME"`` (a bolt's attribute, merged over its tasks, from the run's final
state), ``"component map:NAME"`` (a keyed state map), ``failed_inputs`` or
``end_warnings`` (spouts an engine took as ended after their idle timeout).

The seed (``STORMSHIFT_CONFORMANCE_SEED``, random when unset) picks, per scenario and
engine, the Spark engine's batch size (so the batch cuts) and the local engine's seed
(its shuffle choices); every failure message carries it.
"""

from __future__ import annotations

import itertools
import json
import os
import random
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

from stormshift.engines.summary import RunSummary
from stormshift.topology.loader import load_topology

HERE = Path(__file__).resolve().parent
PROJECT = HERE / "projects" / "features"
SCENARIOS = HERE / "scenarios"
SEED_ENV = "STORMSHIFT_CONFORMANCE_SEED"
SEED = int(os.environ.get(SEED_ENV) or random.SystemRandom().randrange(1, 2**31))
ENGINES = ("local", "spark")


def scenario_names() -> list[str]:
    return sorted(p.stem for p in SCENARIOS.glob("*.json"))


def load_scenario(name: str) -> dict[str, Any]:
    return json.loads((SCENARIOS / f"{name}.json").read_text())


def rows_of(scenario: dict[str, Any]) -> list[list[Any]]:
    spec = scenario["input"]
    return [[n, f"k{n % spec['keys']}"] for n in range(spec["count"])]


def graph_of(scenario: dict[str, Any]) -> Any:
    return load_topology(PROJECT, scenario["topology"],
                         overrides={"conform.rows": rows_of(scenario), **scenario.get("config", {})})


def cuts(name: str, engine: str) -> dict[str, int]:
    """What the seed varies for one scenario on one engine (both derived, printed on failure):
    the Spark batch size cuts the input into 2 to 4 batches (more would only cost time)."""
    rng = random.Random(f"{SEED}:{name}:{engine}")
    count = load_scenario(name)["input"]["count"]
    return {"batch_max_tuples": rng.randint(max(1, count // 4), max(1, count // 2)),
            "local_seed": rng.randrange(2**16)}


def reproduce(name: str, engine: str) -> str:
    return (f"[conformance seed {SEED}: {cuts(name, engine)}; reproduce with "
            f"{SEED_ENV}={SEED} pytest tests/conformance -k '{name} and {engine}']")


# -- running ---------------------------------------------------------------------------
def run_local(name: str, scenario: dict[str, Any]) -> tuple[RunSummary, Any]:
    from stormshift.engines.local import LocalEngine, SimClock

    engine = LocalEngine(graph_of(scenario), clock=SimClock(),
                         seed=cuts(name, "local")["local_seed"], final_tick=True,
                         read_state=True)
    return engine.run(), None


def run_spark(name: str, scenario: dict[str, Any], spark: Any, redis_url: str,
              namespace: str, checkpoint: Path) -> tuple[RunSummary, Any]:
    """One Spark run on the shared session; the clock moves 1 s per batch planned, so
    every batch brings a tick of ``topology.tick.tuple.freq.secs = 1``."""
    from stormshift.engines.spark import SparkEngine
    from stormshift.state.connection import connect
    from stormshift.state.deadletter import DeadLetters

    seconds = itertools.count(1_700_000_000_000, 1000)
    engine = SparkEngine(graph_of(scenario), checkpoint_dir=str(checkpoint),
                         redis_url=redis_url, spark=spark, namespace=namespace,
                         until_done=True, read_state=True,
                         batch_max_tuples=cuts(name, "spark")["batch_max_tuples"],
                         clock=lambda: next(seconds))
    summary = engine.run(on_progress=lambda line: None)
    return summary, DeadLetters(connect(redis_url), namespace)


# -- views -------------------------------------------------------------------------------
def _n(rows: list[list[Any]]) -> list[Any]:
    return sorted(r[1] for r in rows)


def _n_by_task(rows: list[list[Any]]) -> dict[str, list[Any]]:
    out: dict[str, list[Any]] = defaultdict(list)
    for task, n in rows:
        out[str(task)].append(n)
    return {t: sorted(ns) for t, ns in sorted(out.items())}


def _totals_by_key(rows: list[list[Any]]) -> dict[str, list[Any]]:
    out: dict[str, list[Any]] = {}
    for key, *values in rows:
        old = out.get(key, [0] * len(values))
        out[key] = [a + b for a, b in zip(old, values, strict=True)]
    return dict(sorted(out.items()))


def _latest(rows: list[list[Any]]) -> dict[str, list[Any]]:
    return dict(sorted({r[0]: list(r) for r in rows}.items()))


VIEWS: dict[str, Callable[[list[list[Any]]], Any]] = {
    "n": _n,  # (task, n) rows: every n, sorted (a multiset)
    "n_by_task": _n_by_task,  # (task, n) rows: n per task index
    "totals_by_key": _totals_by_key,  # (key, a, b..) rows: column sums per key
    "latest": _latest,  # (key, ..) rows: the last row per key, in emit order
    "rows": lambda rows: sorted(list(r) for r in rows),  # the multiset of rows
    "distinct": lambda rows: sorted({json.dumps(list(r)): list(r) for r in rows}.values()),
}


def _tasks_per_key(rows: list[list[Any]], scenario: dict[str, Any]) -> dict[str, int]:
    key_of = {n: k for n, k in rows_of(scenario)}
    tasks: dict[str, set[Any]] = defaultdict(set)
    for task, n in rows:
        tasks[key_of[n]].add(task)
    return {k: len(ts) for k, ts in sorted(tasks.items())}


def _plain(value: Any) -> Any:
    """Counters, tracked dicts and map keys as plain, JSON-like, sorted dicts."""
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in sorted(value.items(), key=lambda kv: str(kv[0]))}
    return value


def observe(check: str, summary: RunSummary, engine: str, scenario: dict[str, Any],
            letters: Any) -> Any:
    """One check's view of a finished run."""
    if check == "failed_inputs":
        if engine == "local":  # Storm: the spout tuple's tree failed, replayed, given up
            return summary.total("gave_up")
        return len(letters.list())  # Spark: each failing tuple dead-lettered once
    if check == "end_warnings":  # a spout taken as done after its idle timeout
        return [w for w in summary.warnings if "never signalled end of input" in w]
    component, what = check.split(" ", 1)
    if what.startswith("attr:"):
        merged: dict[Any, Any] = {}
        for task in summary.final_state[component].tasks:
            merged.update(task.get(what[5:], {}))
        return _plain(merged)
    if what.startswith("map:"):
        return _plain(summary.final_state[component].maps.get(what[4:], {}))
    name, stream = component.split(":")
    rows = [list(r) for r in summary.output(name, stream)]
    if what == "tasks_per_key":
        return _tasks_per_key(rows, scenario)
    return VIEWS[what](rows)
