"""Component log lines are never dropped silently (issue 31 item 9).

``tests/fixtures/runs/chatty_logs``: a bolt logging five lines per tuple. On
Spark at most ``-o stormshift.logs.max_lines_per_task`` lines per task per batch
reach the log file; the rest are counted per component (``logs_dropped``, in
the table and ``--json``) and a warning names the option. The local engine
has no cap: every line reaches the file.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from stormshift.engines.local import LocalEngine, SimClock
from stormshift.engines.logs import (
    LIMIT_KEY,
    MAX_LINES_PER_TASK,
    ComponentLogs,
    max_lines_per_task,
)
from stormshift.engines.spark.task.counters import MemberStats
from stormshift.errors import TopologyError
from stormshift.topology.loader import load_topology

PROJECT = Path(__file__).resolve().parent / "fixtures" / "runs" / "chatty_logs"


def audit_lines(log: Path) -> list[str]:
    return [line for line in log.read_text().splitlines() if "audit[0]" in line
            and " INFO " in line]


def test_the_limit_is_an_option_validated_with_its_fix() -> None:
    assert max_lines_per_task({}) == MAX_LINES_PER_TASK
    assert max_lines_per_task({LIMIT_KEY: "50"}) == 50 and max_lines_per_task({LIMIT_KEY: 0}) == 0
    for bad in ("lots", -1, 2.5, True):
        with pytest.raises(TopologyError) as err:
            max_lines_per_task({LIMIT_KEY: bad}, component="audit")
        assert LIMIT_KEY in str(err.value) and f"-o {LIMIT_KEY}=" in err.value.fix


def test_a_task_keeps_its_limit_counts_the_rest_and_says_so() -> None:
    stats = MemberStats()
    stats.take_logs([("INFO", f"line {i}") for i in range(30)], 20)
    stats.take_logs([("INFO", "late")], 20)
    assert len(stats.logs) == 20 and stats.logs_dropped == 11
    assert stats.log_lines()[-1] == ["WARN", (f"11 more log lines of this task in this batch were "
                                             f"dropped (-o {LIMIT_KEY}=N keeps more)")]


def test_local_engine_forwards_every_line(tmp_path: Path) -> None:
    graph = load_topology(PROJECT, overrides={LIMIT_KEY: 3})
    with ComponentLogs(str(tmp_path / "audit.log")):
        summary = LocalEngine(graph, clock=SimClock()).run()
    assert len(audit_lines(tmp_path / "audit.log")) == 300
    assert summary.total("logs_dropped") == 0 and not summary.warnings


def spark_run(spark: Any, redis_url: str, namespace: str, tmp_path: Path, limit: int) -> Any:
    from stormshift.engines.spark import SparkEngine

    graph = load_topology(PROJECT, overrides={LIMIT_KEY: limit})
    with ComponentLogs(str(tmp_path / "audit.log")):
        return SparkEngine(graph, checkpoint_dir=str(tmp_path / "ck"), redis_url=redis_url,
                           spark=spark, namespace=namespace, until_done=True,
                           batch_max_tuples=30).run()


def test_spark_drops_past_the_limit_are_counted_and_named(
        spark: Any, redis_url: str, namespace: str, tmp_path: Path) -> None:
    summary = spark_run(spark, redis_url, namespace, tmp_path, 20)
    kept = audit_lines(tmp_path / "audit.log")
    dropped = summary["audit"].logs_dropped
    assert dropped > 0 and len(kept) + dropped == 300
    assert summary.to_dict()["components"]["audit"]["logs_dropped"] == dropped
    assert (f"log lines dropped past 20 per task per batch: audit {dropped:,}; keep them with "
            f"-o {LIMIT_KEY}=N (a larger N)") in summary.warnings
    assert "logs dropped" in [c.header for c in summary.table().columns]


def test_spark_a_larger_limit_keeps_every_line(
        spark: Any, redis_url: str, namespace: str, tmp_path: Path) -> None:
    summary = spark_run(spark, redis_url, namespace, tmp_path, 1000)
    assert len(audit_lines(tmp_path / "audit.log")) == 300
    assert summary.total("logs_dropped") == 0 and not summary.warnings


def test_a_spouts_planner_lines_past_its_cap_are_counted_not_lost_silently(
        tmp_path: Path, redis_url: str, namespace: str) -> None:
    """A generic spout logs in the planner process; the planner keeps ten times the per-task
    limit between two reads of the driver and counts what it pushed out (real Redis)."""
    import redis

    from stormshift.engines.spark.source.spout_report import (
        SPOUT_LINES_PER_LIMIT,
        SpoutReport,
        read_spout_reports,
    )
    from stormshift.engines.summary import RunSummary

    graph = load_topology(PROJECT, overrides={LIMIT_KEY: 2})
    r = redis.Redis.from_url(redis_url)
    report = SpoutReport(r, namespace, "events", graph.config)
    report.logs(0, [("INFO", f"spout line {i}") for i in range(15)])
    report.logs(0, [("INFO", f"spout line {i}") for i in range(15, 25)])
    summary = RunSummary.for_graph(graph, "spark")
    with ComponentLogs(str(tmp_path / "audit.log")):
        read_spout_reports(r, namespace, summary, ["events"])
    kept = 2 * SPOUT_LINES_PER_LIMIT
    lines = [x for x in (tmp_path / "audit.log").read_text().splitlines() if "spout line" in x]
    assert len(lines) == kept and lines[-1].endswith("spout line 24")
    assert summary.components["events"].logs_dropped == 25 - kept
    read_spout_reports(r, namespace, summary, ["events"])  # taken once: nothing counted twice
    assert summary.components["events"].logs_dropped == 25 - kept
