"""The accounting lines agree with the fails and dead letters, on both engines.

Real-shaped project ``tests/fixtures/runs/downstream_failures``: readings ->
parse -> a second-hop bolt that raises on every fourth reading (``ratios``)
or calls ``self.fail`` on every tuple (``rejects``). The first hop's identity
holds; the lines must say what failed past it, never a bare "holds".
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rich.console import Console

from stormshift.engines.local import LocalEngine
from stormshift.runner import print_summary
from stormshift.topology.loader import load_topology

PROJECT = Path(__file__).resolve().parent / "fixtures" / "runs" / "downstream_failures"


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
