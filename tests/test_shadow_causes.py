"""Attribution by cause: what the legacy side (Storm's semantics) lost on its own is never
the port's (issue 50 item 1).

Fixtures under ``tests/fixtures/causes/`` are plain streamparse projects, shaped like the
corpus (``tests/fixtures/corpus/``):

- ``transient_crash``: a bolt keeps counts in memory and raises once mid-run (the user's
  own code, not an injected fault): Storm restarts the task, its counts start again; the
  port keeps them. ``counts.bug=dog`` makes a port that counts ``dog`` twice (a real bug);
- ``poison_tuple``: a bolt always raises on one input: Storm replays it without end and
  gives up; the Spark port dead-letters it. ``corpus.dead_letter`` is that port on the
  local engine (the tuple set aside); ``corpus.window=1`` makes the legacy's spout stop
  at the tuple it never gets an answer for (the legacy does not finish its input).

The port runs on the local engine (no JVM); one Spark case shows the real dead letter.
"""

from __future__ import annotations

import importlib
import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from stormshift.cli.shadow import shadow_command
from stormshift.engines.local import LocalEngine, SimClock
from stormshift.shadow.classify import (
    CRASH_LOST_STATE,
    LEGACY_UNFINISHED,
    PORT_DIFFERENCE,
)
from stormshift.shadow.evidence import losses, unfinished
from stormshift.shadow.report_html import render_html
from stormshift.shadow.run import ShadowResult, compare_runs, run_shadow
from stormshift.shadow.verdict import classes
from stormshift.topology.graph import TopologyGraph
from stormshift.topology.loader import load_topology

CAUSES = Path(__file__).resolve().parent / "fixtures" / "causes"
IGNORE = {"shadow.state": {"ignore": ["count_bolt.bug", "count_bolt.dead_letter"]}}


def load(shape: str, **overrides: Any) -> TopologyGraph:
    graph = load_topology(CAUSES / shape, overrides={**IGNORE, **overrides})
    if shape == "transient_crash":  # the error happens once per process: a fresh process
        importlib.import_module("bolts.flaky_counts").RAISED.clear()
    return graph


def divergences(result: ShadowResult) -> list[Any]:
    return [d for item in [*result.streams, *result.states] for d in item.divergences]


def local_run(graph: TopologyGraph, restart: bool = True) -> Any:
    return LocalEngine(graph, clock=SimClock(ms_per_round=1), seed=0, read_state=True,
                       restart_on_crash=restart).run()


# -- a transient crash: the user's own raise, once ---------------------------------------
def test_a_transient_crash_is_the_legacy_restart_never_the_port() -> None:
    result = run_shadow(load("transient_crash"), port_engine="local")
    assert result.legacy.components["count_bolt"].restarts == 1
    found = divergences(result)
    assert found and {d.cause for d in found} == {CRASH_LOST_STATE}
    assert all(d.detail == "count_bolt restarted 1 time" for d in found)
    verdict = result.verdict
    assert (verdict.word, verdict.exit_code) == ("SAFE TO SWITCH", 0), verdict.line
    assert "legacy crash loss (count_bolt restarted 1 time)" in verdict.reason
    assert [c.id for c in classes(result)] == ["storm-crash-loss"]
    assert result.losses == [
        "count_bolt restarted 1 time (its in-memory state started again from initialize())"]


def test_a_real_port_difference_on_top_of_a_legacy_crash_is_still_the_port() -> None:
    legacy = load("transient_crash")
    port = load_topology(CAUSES / "transient_crash", overrides={**IGNORE, "counts.bug": "dog"})
    result = run_shadow(legacy, port_engine="local", port_graph=port)
    causes = {(d.stream, d.key): d.cause for d in divergences(result)}
    assert causes[("count_bolt:default", "dog")] == PORT_DIFFERENCE
    assert causes[("count_bolt.counts", "dog")] == PORT_DIFFERENCE
    # the keys the crash cost the legacy stay the crash's
    for key in ("elephant", "owl", "zebra"):
        assert causes[("count_bolt.counts", key)] == CRASH_LOST_STATE
    assert causes[("count_bolt.total", "(value)")] == CRASH_LOST_STATE
    verdict = result.verdict
    assert (verdict.word, verdict.exit_code) == ("PORT DIFFERS", 1), verdict.line
    assert "2 of " in verdict.reason and "legacy crash loss" in verdict.reason


def test_the_cause_of_each_key_shows_in_the_terminal_html_and_json(tmp_path: Path) -> None:
    project = str(CAUSES / "transient_crash")
    load("transient_crash")  # the command loads the same modules: its raise is fresh
    done = CliRunner().invoke(shadow_command, [project, "--port-engine", "local", "--json"])
    assert done.exit_code == 0, done.output
    doc = json.loads(done.output)
    keys = [d for s in [*doc["streams"], *doc["state"]] for d in s["divergences"]]
    assert keys and {d["cause"] for d in keys} == {CRASH_LOST_STATE}
    assert doc["legacy_lost"] == [
        "count_bolt restarted 1 time (its in-memory state started again from initialize())"]
    assert doc["verdict"]["verdict"] == "SAFE TO SWITCH"
    load("transient_crash")
    text = CliRunner().invoke(shadow_command, [project, "--port-engine", "local"])
    assert text.exit_code == 0, text.output
    assert "crash lost" in text.output and "legacy lost: count_bolt restarted 1" in text.output
    html = render_html(run_shadow(load("transient_crash"), port_engine="local"))
    assert "id='losses'" in html and "count_bolt restarted 1 time" in html
    assert CRASH_LOST_STATE in html


# -- a poison tuple: the legacy gives up, the port dead-letters ---------------------------
def poison_runs(**legacy_cfg: Any) -> tuple[TopologyGraph, Any, Any, Any]:
    """(graph, legacy, baseline, port): the port as Spark does it, the poison set aside."""
    graph = load("poison_tuple", **legacy_cfg)
    legacy, baseline = local_run(graph), local_run(graph, restart=False)
    port = local_run(load("poison_tuple", **{**legacy_cfg, "corpus.dead_letter": True}))
    port.components["count_bolt"].dead_lettered = 1  # what the Spark port counts for it
    return graph, legacy, baseline, port


def test_a_poison_tuple_the_legacy_gave_up_on_is_never_the_port() -> None:
    graph, legacy, baseline, port = poison_runs()
    assert legacy.components["words"].gave_up == 1 and legacy.components["count_bolt"].restarts
    result = compare_runs(graph, legacy, port, baseline)
    found = divergences(result)
    assert found and {d.cause for d in found} == {CRASH_LOST_STATE}
    assert result.verdict.exit_code == 0, result.verdict.line
    assert result.losses == [
        "count_bolt restarted 11 times (its in-memory state started again from initialize())",
        "1 poison tuple(s) the legacy gave up replaying",
        "the port dead-lettered 1 in count_bolt (poison)"]


def test_a_legacy_run_that_stops_early_is_never_the_port() -> None:
    graph, legacy, baseline, port = poison_runs(**{"corpus.window": 1})
    assert legacy.spout_tuples < port.spout_tuples == 40
    assert "took 8 of the 40 spout tuples" in unfinished(baseline, port)
    result = compare_runs(graph, legacy, port, baseline)
    causes = {d.cause for d in divergences(result)}
    assert LEGACY_UNFINISHED in causes and PORT_DIFFERENCE not in causes, causes
    verdict = result.verdict
    assert (verdict.word, verdict.exit_code) == ("SAFE TO SWITCH", 0), verdict.line
    assert "input the legacy did not finish" in verdict.reason
    assert "32 spout tuple(s) never taken by the legacy (8 of 40)" in losses(legacy, port)
    assert "legacy-unfinished" in [c.id for c in classes(result)]


def test_without_a_baseline_an_unfinished_legacy_still_explains_keys_below_the_port() -> None:
    graph, _legacy, _, port = poison_runs(**{"corpus.window": 1})
    baseline = local_run(graph, restart=False)
    result = compare_runs(graph, baseline, port)  # no restarts to tell apart: no baseline
    assert {d.cause for d in divergences(result)} == {LEGACY_UNFINISHED}
    assert result.verdict.exit_code == 0


def test_an_unfinished_legacy_does_not_excuse_a_port_that_holds_more_than_it_should() -> None:
    graph, legacy, baseline, port = poison_runs(**{"corpus.window": 1})
    port.final_state["count_bolt"].tasks[0]["counts"]["fox"] = -5  # below the legacy
    result = compare_runs(graph, legacy, port, baseline)
    causes = {d.key: d.cause for d in result.states[0].divergences}
    assert causes["fox"] == PORT_DIFFERENCE
    assert result.verdict.exit_code == 1


def test_a_finished_legacy_is_not_unfinished_and_a_shared_budget_is_no_loss() -> None:
    graph = load("transient_crash")
    run = local_run(graph)
    assert unfinished(run, run) == "" and losses(run, run)[1:] == []
    budget = LocalEngine(graph, clock=SimClock(ms_per_round=1), seed=0).run(max_tuples=10)
    assert unfinished(budget, budget) == ""  # the port stopped at the same budget


# -- the port on Spark: the real dead letter ----------------------------------------------
@pytest.mark.spark
def test_a_poison_tuple_on_the_spark_port_is_dead_lettered_and_safe(
        spark: Any, redis_url: str) -> None:
    result = run_shadow(load("poison_tuple"), port_engine="spark", spark=spark,
                        redis_url=redis_url, namespace="t-causes-poison", batch_max_tuples=20)
    assert result.port.components["count_bolt"].dead_lettered == 1
    assert PORT_DIFFERENCE not in {d.cause for d in divergences(result)}
    assert result.verdict.exit_code == 0, result.verdict.line
    assert "the port dead-lettered 1 in count_bolt (poison)" in result.losses


@pytest.mark.spark
def test_a_transient_crash_with_the_port_on_spark_is_safe(spark: Any, redis_url: str) -> None:
    """The port's own raise is retried from its committed state (and ``count_bolt.bug``,
    None, is an attribute the port snapshots: a delta once asked None for its changes)."""
    result = run_shadow(load("transient_crash"), port_engine="spark", spark=spark,
                        redis_url=redis_url, namespace="t-causes-transient", batch_max_tuples=20)
    assert {d.cause for d in divergences(result)} == {CRASH_LOST_STATE}
    assert result.verdict.exit_code == 0, result.verdict.line
