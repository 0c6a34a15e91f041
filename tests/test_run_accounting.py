"""The accounting lines agree with the fails, dead letters and stops, on both engines.

Real-shaped project ``tests/fixtures/runs/downstream_failures``: readings ->
parse -> a second-hop bolt that raises on every fourth reading (``ratios``)
or calls ``self.fail`` on every tuple (``rejects``). The first hop's identity
holds; the lines must say what failed past it, never a bare "holds".
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from rich.console import Console

from stormshift.engines.accounting import accounting_lines
from stormshift.engines.local import LocalEngine
from stormshift.engines.summary import RunSummary
from stormshift.runner import print_summary
from stormshift.topology.loader import load_topology

PROJECT = Path(__file__).resolve().parent / "fixtures" / "runs" / "downstream_failures"
ENRICH = Path(__file__).resolve().parent / "fixtures" / "runs" / "slow_bolt"


def summary_text(graph: Any, summary: Any) -> str:
    console = Console(record=True, width=100)
    print_summary(graph, summary, console)
    return console.export_text()


def accounting_block(text: str) -> list[str]:
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("accounting:"))
    end = next((i for i in range(start + 1, len(lines)) if not lines[i].startswith("  ")),
               len(lines))
    return lines[start:end]


def test_local_a_second_hop_that_raises_is_named_beside_the_first_hop() -> None:
    graph = load_topology(PROJECT, name="ratios")
    summary = LocalEngine(graph).run()
    block = accounting_block(summary_text(graph, summary))
    assert block[:3] == [
        "accounting: input 10 = processed 10 + failed 0 at the first hop (holds)",
        "  then downstream: ratio in 10 = acked 7 + failed 3",
        "  spout trees: 7 completed, 3 failed (a bolt failed them, or they timed out)",
    ]
    assert summary["readings"].fails == 3 and summary["ratio"].errors == 3
    top = summary.accounting()["topology"]
    assert top["downstream"] == {"ratio": 3} and top["holds"]


def test_local_a_bolt_failing_every_tuple_shows_in_the_accounting() -> None:
    graph = load_topology(PROJECT, name="rejects")
    summary = LocalEngine(graph).run()
    block = accounting_block(summary_text(graph, summary))
    assert block[:3] == [
        "accounting: input 300 = processed 300 + failed 0 at the first hop (holds)",
        "  then downstream: validate in 300 = acked 0 + failed 300",
        "  spout trees: 0 completed, 300 failed (a bolt failed them, or they timed out)",
    ]
    assert summary["readings"].fails == 300


def test_spark_a_second_hop_that_raises_is_named_beside_the_first_hop(
        spark: Any, redis_url: str, namespace: str, tmp_path: Path) -> None:
    from stormshift.engines.spark import SparkEngine

    graph = load_topology(PROJECT, name="ratios")
    summary = SparkEngine(graph, checkpoint_dir=str(tmp_path / "ck"), redis_url=redis_url,
                          spark=spark, namespace=namespace, until_done=True,
                          batch_max_tuples=4).run()
    block = accounting_block(summary_text(graph, summary))
    assert block == [
        "accounting: input 10 = processed 10 + dead-lettered 0 at the first hop (holds)",
        "  then downstream: ratio in 10 = acked 7 + dead-lettered 3",
        "  ratio dead letters by reason: raised 3",
    ]
    assert summary["ratio"].dead_lettered == 3


def test_local_sigterm_counts_the_tuple_in_flight_not_a_broken_accounting(tmp_path: Path) -> None:
    """33.8: SIGTERM while a bolt waits 0.2 s per tuple: exit 130, the accounting holds with
    the one tuple inside the bolt's call counted in flight."""
    started = tmp_path / "bolt-started"
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent),
           "SLOW_BOLT_STARTED": str(started)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "stormshift", "run", str(ENRICH), "-n", "enrich", "--engine",
         "local", "--json"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        cwd=tmp_path, env=env)
    deadline = time.monotonic() + 120  # start-up alone can take seconds on a loaded machine
    while not started.exists() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.1)
    assert started.exists(), "the slow bolt never received a tuple"
    time.sleep(1.0)  # a few tuples through the slow bolt
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    report = json.loads(out)
    assert report["stop_reason"] == "interrupted" and report["exit_code"] == 130
    top, enrich = report["accounting"]["topology"], report["components"]["enrich"]
    assert top["holds"] and top["in_flight"] == 1 and enrich["in_flight"] == 1
    assert enrich["tuples_in"] == enrich["acks"] + 1 > 1
    assert top["input"] == top["processed"] + top["in_flight"]


def test_in_flight_is_a_term_of_the_identity_in_the_lines() -> None:
    graph = load_topology(ENRICH, name="enrich")
    summary = RunSummary.for_graph(graph, "local")
    summary.stop_reason = "interrupted"
    summary.spout_tuples = summary["words"].tuples_out = 19
    bolt = summary["enrich"]
    bolt.tuples_in = bolt.received = 19
    bolt.acks, bolt.in_flight = 18, 1
    assert accounting_lines(summary) == [
        "accounting: input 19 = processed 18 + failed 0 + in flight 1 (holds)",
        "  in flight when the run stopped: enrich 1 (inside the bolt's call, not yet acked)",
    ]
    bolt.in_flight = 0  # the same numbers without the stop: a gap, and said so
    assert accounting_lines(summary)[0].endswith("(does NOT hold)")
