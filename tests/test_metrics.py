"""Metrics without Spark or a Redis server: the histogram, the board, the Prometheus text
(parsed by prometheus_client's own parser), the local engine's endpoint during a real run,
`stormshift top` on a board, and the Grafana dashboard's queries."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from support.metrics_scrape import per_component, scrape

from stormshift.metrics.board import Board
from stormshift.metrics.exposition import MetricsServer, metric_names
from stormshift.metrics.latency import BOUNDS_US, LatencyHistogram

ROOT = Path(__file__).resolve().parent.parent


def test_latency_quantiles_interpolate_within_the_bucket_like_histogram_quantile():
    h = LatencyHistogram()
    for us in [5] * 50 + [40] * 49 + [3_000_000]:  # 3 s falls in +Inf
        h.observe_ns(us * 1000)
    assert h.count == 100 and h.counts[0] == 50 and h.counts[2] == 49 and h.counts[-1] == 1
    assert h.quantile_ms(0.5) == pytest.approx(0.010)  # rank 50: the top of bucket (0, 10us]
    assert h.quantile_ms(0.99) == pytest.approx(0.050)  # rank 99: top of (25, 50us]
    assert h.quantile_ms(1.0) == BOUNDS_US[-1] / 1000  # +Inf reads as the last bound
    assert LatencyHistogram().quantile_ms(0.5) == 0.0


def test_latency_merge_is_exact_and_order_free():
    a, b = LatencyHistogram(), LatencyHistogram()
    for us in (1, 30, 700):
        a.observe_ns(us * 1000)
    for us in (9000, 30):
        b.observe_ns(us * 1000)
    ab, ba = LatencyHistogram.from_list(a.to_list()), LatencyHistogram.from_list(b.to_list())
    ab.merge(b)
    ba.merge(a.to_list())
    assert ab == ba and ab.count == 5 and ab.sum_us == 1 + 30 + 700 + 9000 + 30


def _board() -> Board:
    board = Board("topo", "spark")
    board.task("spout", 0).kind = "spout"
    board.add("spout", 0, tuples_out=10)
    board.add("bolt", 0, tuples_in=6, tuples_out=6, acks=5, dead_lettered=1)
    board.add("bolt", 1, tuples_in=4, acks=4)
    board.busy_in_batch("bolt", 0, 50.0, 200.0)
    board.task("bolt", 0).latency.observe_ns(200_000)
    board.task("bolt", 1).state_bytes = 1234
    board.add_windows("bolt", {"on_time": 7, "late_stream": 2})
    board.watermarks_ms["bolt"] = 60_000
    board.batch(200.0, 4, 1_700_000_000_000)
    return board


def test_board_survives_its_json_form():
    board = _board()
    again = Board.from_dict(json.loads(json.dumps(board.to_dict())))
    assert again.to_dict() == board.to_dict()
    assert again.task("bolt", 0).capacity == 0.25
    with pytest.raises(KeyError, match="not one of"):
        board.add("bolt", 0, tuples=1)


def test_endpoint_text_parses_and_carries_every_figure():
    server = MetricsServer(Board("topo", "spark"), port=0)
    try:
        assert server.host == "127.0.0.1"  # never every interface unless told
        server.publish(_board())
        got = scrape(server.url)
    finally:
        server.close()
    bolt0 = (("component", "bolt"), ("task", "0"), ("topology", "topo"))
    assert got[("stormshift_tuples_in_total", bolt0)] == 6
    assert per_component(got, "stormshift_tuples_in_total") == {"spout": 0, "bolt": 10}
    assert per_component(got, "stormshift_tuples_acked_total")["bolt"] == 9
    assert per_component(got, "stormshift_tuples_dead_lettered_total")["bolt"] == 1
    assert got[("stormshift_capacity", bolt0)] == 0.25
    assert got[("stormshift_execute_latency_seconds_count", bolt0)] == 1
    assert got[("stormshift_execute_latency_p50_seconds", bolt0)] == pytest.approx(0.000175)
    assert per_component(got, "stormshift_state_bytes_written_total")["bolt"] == 1234
    whole = (("component", "bolt"), ("kind", "late_stream"), ("task", "all"), ("topology", "topo"))
    assert got[("stormshift_window_tuples_total", whole)] == 2
    assert per_component(got, "stormshift_watermark_seconds") == {"bolt": 60.0}
    assert per_component(got, "stormshift_batches_total") == {"all": 1}
    assert per_component(got, "stormshift_batch_duration_seconds") == {"all": 0.2}
    assert {name for name, _ in got} <= metric_names()


def test_a_busy_port_is_a_clear_error():
    from stormshift.errors import StormshiftError

    first = MetricsServer(Board("topo", "spark"), port=0)
    try:
        with pytest.raises(StormshiftError, match=f"--metrics-port {first.port}: .*fix: pick"):
            MetricsServer(Board("topo", "spark"), port=first.port)
    finally:
        first.close()


def test_local_engine_scrape_during_and_after_a_run_equals_its_summary(tmp_path):
    """A real local run (wordcount: a spout and a 2-task fields-grouped bolt)."""
    from stormshift.engines.local import LocalEngine
    from stormshift.topology.loader import load_topology

    graph = load_topology(str(ROOT / "examples" / "wordcount"))
    server = MetricsServer(Board.for_graph(graph, "local"), port=0)
    during: list[dict[Any, float]] = []

    def publish(board: Board) -> None:
        server.publish(board)
        if not during and board.task("count_bolt", 0).tuples_in:
            during.append(scrape(server.url))  # a scrape while the run goes on

    try:
        summary = LocalEngine(graph, on_metrics=publish, progress_interval_secs=0.05).run(
            max_tuples=3000)
        after = scrape(server.url)
    finally:
        server.close()
    assert during, "no scrape happened during the run"
    assert 0 < per_component(during[0], "stormshift_tuples_in_total")["count_bolt"] <= 3000
    for counter, column in (("tuples_in", "tuples_in"), ("tuples_out", "tuples_out"),
                            ("tuples_acked", "acks"), ("tuples_failed", "fails")):
        got = per_component(after, f"stormshift_{counter}_total")
        assert got == {c: getattr(s, column) for c, s in summary.components.items()}, counter
    assert summary["count_bolt"].tuples_in == 3000
    tasks = {dict(k)["task"] for (n, k) in after if n == "stormshift_capacity"
             and dict(k)["component"] == "count_bolt"}
    assert tasks == {"0", "1"}
    samples = per_component(after, "stormshift_execute_latency_seconds_count")
    assert samples["count_bolt"] == 3000  # the local engine times every execute
    assert 0 < after[("stormshift_execute_latency_p99_seconds", (("component", "count_bolt"),
                                                                ("task", "0"),
                                                                ("topology", "wordcount")))] < 1


def test_top_once_and_json_read_the_board_in_redis(redis_url: str, namespace: str) -> None:
    """``top`` reads the record a run writes, on a real Redis (``--redis``)."""
    import redis
    from click.testing import CliRunner

    from stormshift.cli import cli
    from stormshift.metrics.records import write_board

    r = redis.Redis.from_url(redis_url)
    board = _board()
    board.add("[red]x", 0, tuples_in=1)  # markup in a name shows as typed
    write_board(r, namespace, board)
    runner = CliRunner()
    once = runner.invoke(cli, ["top", namespace, "--once", "--redis", redis_url],
                         env={"COLUMNS": "200"})
    as_json = runner.invoke(cli, ["top", namespace, "--json", "--redis", redis_url])
    missing = runner.invoke(cli, ["top", "nope", "--once", "--redis", redis_url])
    assert once.exit_code == 0, once.output
    assert "topo on spark: running, 1 batches" in once.output
    assert re.search(r"bolt\s+│\s+0\s+│\s+6\s+│\s+6\s+│\s+5\s+│\s+0\s+│\s+1\s+│\s+0\.250", once.output)
    assert "[red]x" in once.output and "windowed bolts" in once.output
    assert json.loads(as_json.output) == json.loads(json.dumps(board.to_dict(), sort_keys=True))
    assert missing.exit_code != 0
    assert "no metrics record for namespace 'nope'" in str(missing.exception or missing.output)


def test_grafana_dashboard_is_valid_and_queries_only_served_metrics():
    dash = json.loads((ROOT / "examples" / "grafana" / "stormshift.json").read_text())
    assert dash["title"] and dash["uid"] and isinstance(dash["schemaVersion"], int)
    names = metric_names()
    used: set[str] = set()
    ids = set()
    for panel in dash["panels"]:
        assert {"id", "type", "title", "gridPos", "targets"} <= set(panel), panel.get("title")
        ids.add(panel["id"])
        for target in panel["targets"]:
            used.update(re.findall(r"\bstormshift_[a-z0-9_]+", target["expr"]))
    for var in dash["templating"]["list"]:
        used.update(re.findall(r"\bstormshift_[a-z0-9_]+", json.dumps(var)))
    assert len(ids) == len(dash["panels"])
    assert used and used <= names, sorted(used - names)
    families = {n for n in names if not n.endswith(("_total", "_bucket", "_sum", "_count"))}
    shown = {re.sub(r"_(total|bucket|sum|count)$", "", n) for n in used}
    assert families <= shown | {"stormshift_execute_latency_seconds"}, sorted(families - shown)


def test_run_with_metrics_port_prints_the_endpoint_and_closes_it_at_the_end(tmp_path):
    import io
    import urllib.error

    from rich.console import Console

    from stormshift.runner import RunOptions, run_topology
    from stormshift.topology.loader import load_topology

    graph = load_topology(str(ROOT / "examples" / "wordcount"))
    out = io.StringIO()
    options = RunOptions(engine="local", max_tuples=200, metrics_port=0,
                         log_file=str(tmp_path / "run.log"))
    summary = run_topology(graph, options, progress=Console(file=out, width=200))
    assert summary["count_bolt"].tuples_in == 200
    url = re.search(r"metrics: (http://127\.0\.0\.1:\d+/metrics)", out.getvalue())
    assert url, out.getvalue()
    with pytest.raises(urllib.error.URLError):
        urllib.request.urlopen(url.group(1), timeout=5)  # the endpoint lives as long as the run


def test_local_engine_serves_its_windowed_bolts_watermarks_like_the_spark_engine():
    """examples/adclicks on the local engine: each windowed bolt's watermark (the lowest of
    its tasks') is on the board during the run and on the endpoint at its end."""
    from stormshift.engines.local import LocalEngine, SimClock
    from stormshift.topology.loader import load_topology

    graph = load_topology(str(ROOT / "examples" / "adclicks"), overrides={"adclicks.events": 2000})
    windowed = {"ad_ctr_minute_bolt", "advertiser_day_bolt", "user_sessions_bolt"}
    server = MetricsServer(Board.for_graph(graph, "local"), port=0)
    seen: list[dict[str, int]] = []

    def publish(board: Board) -> None:
        server.publish(board)
        seen.append(dict(board.watermarks_ms))

    try:
        LocalEngine(graph, clock=SimClock(ms_per_round=1), seed=0, on_metrics=publish,
                    progress_interval_secs=0.05).run()
        after = scrape(server.url)
    finally:
        server.close()
    marks = per_component(after, "stormshift_watermark_seconds")
    assert windowed and set(marks) >= windowed, (sorted(marks), sorted(windowed))
    during = [s for s in seen[:-1] if s]
    assert during, "no watermark on the board while the run went on"
    # mid-run: event time of the generated clicks (2020s, Unix seconds), moving forward
    firsts = [s[b] for s in during for b in sorted(windowed) if b in s and 0 < s[b] < 2**62]
    assert firsts and all(1.5e12 < ms < 2.5e12 for ms in firsts)


def test_every_record_of_a_run_carries_the_one_tuple_counters_vocabulary() -> None:
    """``TupleCounts`` names the counters once: the board's task figures, a Spark task's
    record and the run summary's component stats are each one, and the task record's wire
    order names every one of them."""
    from dataclasses import fields

    from stormshift.engines.spark.task import counters as task_counters
    from stormshift.engines.summary import ComponentStats
    from stormshift.metrics.board import TaskFigures
    from stormshift.metrics.counts import COUNTERS, TupleCounts

    for record in (TaskFigures, task_counters.MemberStats, ComponentStats):
        assert issubclass(record, TupleCounts)
        assert [f.name for f in fields(record) if f.name in COUNTERS] == list(COUNTERS)
    assert set(COUNTERS) <= set(task_counters.COUNTERS)
    stats = task_counters.MemberStats(tuples_in=3, errors=1, dead_lettered=2)
    assert task_counters.MemberStats(**dict(zip(task_counters.COUNTERS, [
        getattr(stats, c) for c in task_counters.COUNTERS]))) == stats
