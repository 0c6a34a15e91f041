"""Metrics of real Spark runs (local[2], real Redis): the endpoint scraped while the run goes
on and at its end, parsed by prometheus_client's own parser, equals the run's summary;
`stormshift top` reads the same figures from Redis."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

FIXTURES = Path(__file__).parent / "spark_fixtures"
sys.path.insert(0, str(FIXTURES))

import sparktopo
import windowtopo
from support.metrics_scrape import per_component, scrape
from support.windows_harness import load, spark_batches

from stormshift.engines.spark import SparkEngine
from stormshift.metrics.board import Board
from stormshift.metrics.exposition import MetricsServer
from stormshift.topology.loader import load_topology

pytestmark = [pytest.mark.spark, pytest.mark.redis]
COUNTERS = (("tuples_in", "tuples_in"), ("tuples_out", "tuples_out"), ("tuples_acked", "acks"),
            ("tuples_failed", "fails"), ("tuples_dead_lettered", "dead_lettered"))


def run_scraped(graph: Any, **kw: Any) -> tuple[Any, list[dict], dict, list[str]]:
    """Run with an endpoint; scrape after every batch's progress line and once at the end."""
    server = MetricsServer(Board.for_graph(graph, "spark"), port=0)
    during: list[dict] = []
    lines: list[str] = []

    def progress(line: str) -> None:
        lines.append(line)
        if line.startswith("batch "):
            during.append(scrape(server.url))

    try:
        summary = SparkEngine(graph, metrics=server, until_done=True, **kw).run(
            on_progress=progress)
        after = scrape(server.url)
    finally:
        server.close()
    return summary, during, after, lines


def assert_counters_equal_summary(samples: dict, summary: Any) -> None:
    for counter, column in COUNTERS:
        got = per_component(samples, f"stormshift_{counter}_total")
        want = {c: getattr(s, column) for c, s in summary.components.items()}
        assert got == want, counter


def test_scrape_during_a_spark_run_and_at_its_end_equals_the_summary(
        spark, redis_url, namespace, tmp_path):
    from click.testing import CliRunner

    from stormshift.cli import cli

    graph = load_topology(sparktopo.Stateful)  # a stateful bolt, a poison tuple, a join
    summary, during, after, lines = run_scraped(
        graph, checkpoint_dir=str(tmp_path / "ck"), redis_url=redis_url, spark=spark,
        namespace=namespace, batch_max_tuples=20)
    assert summary.stop_reason == "done"
    committed = [line for line in lines if line.startswith("batch ") and " committed " in line]
    assert len(during) >= 3 and len(committed) >= 3
    batches = [per_component(s, "stormshift_batches_total")["all"] for s in during]
    assert batches == sorted(batches) and batches[0] >= 1  # a live endpoint, batch by batch
    first_in = per_component(during[0], "stormshift_tuples_in_total")
    assert sum(first_in.values()) < sum(per_component(after, "stormshift_tuples_in_total").values())
    assert_counters_equal_summary(after, summary)
    assert per_component(after, "stormshift_batches_total") == {"all": len(committed)}
    assert summary["sums"].dead_lettered == 1  # the poison tuple, seen by the endpoint too
    for bolt in ("sums", "doubler", "join"):
        tasks = [dict(k) for n, k in after if n == "stormshift_capacity"
                 and dict(k)["component"] == bolt]
        assert len(tasks) == graph.component(bolt).par
    assert per_component(after, "stormshift_state_bytes_written_total")["sums"] > 0
    restores = per_component(after, "stormshift_state_restores_total")
    catch_ups = per_component(after, "stormshift_state_catch_ups_total")
    # a first run on a fresh namespace is "started", not a restore; after it the live
    # instances stay in their task hosts (engines/spark/task/task_host.py)
    assert restores["sums"] + catch_ups["sums"] == 0
    assert summary["sums"].started == graph.component("sums").par
    assert per_component(after, "stormshift_execute_latency_seconds_count")["sums"] > 0
    assert 0 < per_component(after, "stormshift_busy_seconds_total")["sums"]
    assert 0 < per_component(after, "stormshift_batch_seconds_total")["all"]

    # `stormshift top` from "another shell": the record in Redis says the same
    runner = CliRunner()
    as_json = runner.invoke(cli, ["top", namespace, "--redis", redis_url, "--json"])
    assert as_json.exit_code == 0, as_json.output
    board = json.loads(as_json.output)
    assert board["stop_reason"] == "done" and board["batches"] == len(committed)
    for counter, column in COUNTERS:
        got: dict[str, int] = {}
        for t in board["tasks"]:
            got[t["component"]] = got.get(t["component"], 0) + t[column]
        assert got == {c: getattr(s, column) for c, s in summary.components.items()}, counter
    once = runner.invoke(cli, ["top", namespace, "--redis", redis_url, "--once"],
                         env={"COLUMNS": "200"})
    assert once.exit_code == 0, once.output
    assert f"{graph.name} on spark: done, {len(committed)} batches" in once.output


def test_windowed_bolt_watermark_and_late_counts_on_spark(spark, redis_url, namespace, tmp_path):
    name = "tumbling_late_pane_then_late_stream"
    scenario = load(name)
    steps, cuts, times = spark_batches(scenario)
    graph = load_topology(windowtopo.topology(scenario.get("partitions", 1)), overrides={
        "steps.steps": json.dumps(steps), "steps.cuts": json.dumps(cuts),
        "steps.partitions": scenario.get("partitions", 1), "fixture.scenario": name})
    clock = iter(times)
    summary, _, after, _ = run_scraped(
        graph, checkpoint_dir=str(tmp_path / "ck"), redis_url=redis_url, spark=spark,
        namespace=namespace, clock=lambda: next(clock, times[-1]))
    assert summary.stop_reason == "done"
    assert_counters_equal_summary(after, summary)
    kinds = {dict(k)["kind"]: v for (n, k), v in after.items()
             if n == "stormshift_window_tuples_total" and dict(k)["component"] == "windows"}
    assert kinds == summary["windows"].windows and kinds["late_stream"] >= 1
    assert "windows" in per_component(after, "stormshift_watermark_seconds")
