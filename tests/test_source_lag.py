"""Per-source lag (``stormshift_source_lag``) on real runs, one per replayable source kind.

The oracle is the ``--max-tuples`` rule (tests/test_max_tuples.py): a run cut at N
takes N/2 tuples from each of the two spout tasks, so each task's lag at the end is
its partitions' records minus N/2 -- JSON lines (files a 10, b 25, c 7: task 0 holds
a + c = 17 lines, task 1 b = 25), Redis Streams (a 8, b 30, c 12: 20 and 30 entries),
Kafka (partitions 9, 14, 5, 11: 14 and 25 records). Spark's figure is the lag behind
the offsets its planner planned last; the local engine's, behind its spouts' cursors
(``jsonlines.local_chunk`` 1: a cursor is then exactly what the task emitted).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parent / "spark_fixtures"))

import maxtopo
from support.kafka_broker import TansuBroker
from support.kafka_topics import SIZES, fill, topic_name
from support.kafka_topics import kafka_graph as topic_graph
from support.max_tuples import jsonlines_graph, make_redis_streams
from support.metrics_scrape import scrape

from stormshift.metrics.board import Board
from stormshift.metrics.exposition import MetricsServer
from stormshift.topology.loader import load_topology


@pytest.fixture
def redis_streams(redis_url: str) -> Iterator[tuple[Any, list[list[int]]]]:
    """Streams a, b, c of random names (``support.max_tuples.make_redis_streams``)."""
    yield from make_redis_streams(redis_url)


def lags(samples: dict, name: str = "stormshift_source_lag") -> dict[tuple[str, str], float]:
    return {(dict(k)["component"], dict(k)["task"]): v for (n, k), v in samples.items()
            if n == name}


def run_spark_scraped(spark: Any, graph: Any, tmp_path: Path, redis_url: str, namespace: str,
                      n: int) -> tuple[Any, list[dict], dict]:
    """A Spark run cut at ``n`` with an endpoint, scraped after every batch and at its end."""
    from stormshift.engines.spark import SparkEngine

    server = MetricsServer(Board.for_graph(graph, "spark"), port=0)
    during: list[dict] = []

    def progress(line: str) -> None:
        if line.startswith("batch "):
            during.append(scrape(server.url))

    try:
        summary = SparkEngine(graph, checkpoint_dir=str(tmp_path / "ck"), redis_url=redis_url,
                              spark=spark, namespace=namespace, batch_max_tuples=4,
                              metrics=server).run(max_tuples=n, duration_secs=120,
                                                  on_progress=progress)
        after = scrape(server.url)
    finally:
        server.close()
    assert summary.stop_reason == f"max_tuples={n} reached" and summary.spout_tuples == n
    return summary, during, after


def top_json(redis_url: str, namespace: str) -> dict:
    from click.testing import CliRunner

    from stormshift.cli import cli

    got = CliRunner().invoke(cli, ["top", namespace, "--redis", redis_url, "--json"])
    assert got.exit_code == 0, got.output
    return json.loads(got.output)


def assert_falls_to(during: list[dict], after: dict, want: dict) -> None:
    """Each task's lag never grows during the run (a bounded input) and ends at ``want``."""
    assert lags(after) == want
    series = [lags(s) for s in during if lags(s)]
    assert len(series) >= 2, "no lag scraped while the run went on"
    for key, end in want.items():
        values = [s[key] for s in series if key in s]
        assert values == sorted(values, reverse=True) and values[0] > end, (key, values)


def test_jsonlines_lag_on_spark_scraped_during_the_run_and_in_top(spark, redis_url, namespace,
                                                                  tmp_path):
    graph, _ = jsonlines_graph(tmp_path / "in")
    _, during, after = run_spark_scraped(spark, graph, tmp_path, redis_url, namespace, 20)
    want = {("numbers", "0"): 17 - 10, ("numbers", "1"): 25 - 10}
    assert_falls_to(during, after, want)
    assert set(lags(after, "stormshift_source_lag_lower_bound").values()) == {0}
    board = top_json(redis_url, namespace)  # the record in Redis says the same
    got = {(t["component"], str(t["task"])): t["source_lag"] for t in board["tasks"]
           if t["source_lag"] >= 0}
    assert got == want


def test_redis_streams_lag_on_spark_is_a_lower_bound_past_its_cap(spark, redis_url, namespace,
                                                                  tmp_path, redis_streams):
    graph, _ = redis_streams
    graph = load_topology(maxtopo.RedisStreams, overrides={
        "redis_streams.url": redis_url, "redis_streams.keys": graph.config["redis_streams.keys"],
        "redis_streams.lag_cap": 5})
    _, during, after = run_spark_scraped(spark, graph, tmp_path, redis_url, namespace, 14)
    # task 0 read 7 of a (8), none of c (12): 1 entry after its offset in a, none before
    # it in c: 13, exact; task 1 read 7 of b (30): 23 after, 7 before, both past the cap
    # of 5: at least 5 -- a lower bound, and said so
    want = {("numbers", "0"): 13, ("numbers", "1"): 5}
    assert lags(after) == want
    assert lags(after, "stormshift_source_lag_lower_bound") == {("numbers", "0"): 0,
                                                                ("numbers", "1"): 1}
    assert any(lags(s) for s in during)
    from rich.console import Console

    from stormshift.cli.top import render
    from stormshift.metrics.records import read_board
    from stormshift.state.connection import connect

    console = Console(width=200, record=True)
    console.print(render(read_board(connect(redis_url), namespace), 0))
    text = console.export_text()
    assert "sources" in text and ">= 5" in text


def test_jsonlines_lag_on_the_local_engine_at_its_cursors(tmp_path):
    from stormshift.engines.local import LocalEngine

    jsonlines_graph(tmp_path / "in")  # the files
    graph = load_topology(maxtopo.JsonLines, overrides={
        "jsonlines.path": str(tmp_path / "in"), "jsonlines.local_chunk": 1})
    boards: list[Board] = []
    summary = LocalEngine(graph, on_metrics=lambda b: boards.append(Board.from_dict(b.to_dict())),
                          progress_interval_secs=0.01).run(max_tuples=20)
    assert summary.spout_tuples == 20
    final = boards[-1]
    assert [final.task("numbers", t).source_lag for t in (0, 1)] == [7, 15]
    assert final.task("seen", 0).source_lag == -1  # a bolt has none


@pytest.fixture
def broker() -> Any:
    b = TansuBroker()
    yield b
    b.stop()


def kafka_graph(broker: Any, **conf: Any) -> Any:
    """Partitions of 9, 14, 5, 11 records: task 0 holds 0 and 2 (14), task 1 1 and 3 (25)."""
    topic = topic_name("lag")
    fill(broker, topic, SIZES)
    return topic_graph(broker, topic, **conf)


def test_kafka_lag_on_spark_is_the_high_watermark_minus_the_position(spark, redis_url, namespace,
                                                                     tmp_path, broker):
    graph = kafka_graph(broker)
    _, during, after = run_spark_scraped(spark, graph, tmp_path, redis_url, namespace, 20)
    assert_falls_to(during, after, {("numbers", "0"): 14 - 10, ("numbers", "1"): 25 - 10})


def test_kafka_lag_on_the_local_engine_at_its_cursors(broker):
    from stormshift.engines.local import LocalEngine

    graph = kafka_graph(broker, **{"kafka.local_chunk": 1})
    boards: list[Board] = []
    summary = LocalEngine(graph, on_metrics=lambda b: boards.append(Board.from_dict(b.to_dict())),
                          progress_interval_secs=0.01).run(max_tuples=20)
    assert summary.spout_tuples == 20
    assert [boards[-1].task("numbers", t).source_lag for t in (0, 1)] == [4, 15]
