"""Throughput of the local (Storm-semantics) engine on the two examples.

For examples/wordcount (``--tuples`` spout tuples) and examples/adclicks
(``--events`` generated log lines) it prints, per run on the wall clock:
spout tuples/s, bolt executions/s, engine overhead per bolt execution
(wall time minus time inside user calls, over executions), the spouts'
mean complete latency, and peak RSS. Best of ``--repeats`` runs.

    python bench/local_engine.py [--tuples 100000] [--events 50000] [--repeats 3]
"""

from __future__ import annotations

import argparse
import resource
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from stormshift.engines.local import LocalEngine
from stormshift.topology.loader import load_topology


def measure(graph: Any, max_tuples: int | None) -> dict[str, float]:
    started = time.perf_counter()
    summary = LocalEngine(graph).run(max_tuples=max_tuples)
    wall_s = time.perf_counter() - started
    bolts = [s for s in summary.components.values() if s.kind == "bolt"]
    executions = sum(s.tuples_in for s in bolts)
    busy_s = sum(s.busy_ms for s in summary.components.values()) / 1000
    spouts = [s for s in summary.components.values() if s.kind == "spout"]
    return {
        "wall_s": wall_s,
        "spout_per_s": summary.spout_tuples / wall_s,
        "exec_per_s": executions / wall_s,
        "overhead_us": (wall_s - busy_s) / max(1, executions + summary.spout_tuples) * 1e6,
        "latency_ms": max(s.complete_latency_ms for s in spouts),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tuples", type=int, default=100_000)
    parser.add_argument("--events", type=int, default=50_000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    cases = [
        (
            "wordcount",
            load_topology(ROOT / "examples" / "wordcount", name="wordcount"),
            args.tuples,
        ),
        (
            "adclicks",
            load_topology(
                ROOT / "examples" / "adclicks",
                name="adclicks",
                # the legacy topology, as this bench has always measured it
                overrides={"adclicks.events": args.events, "adclicks.windows": False},
            ),
            None,
        ),
    ]
    print(
        f"{'topology':<10} {'wall s':>7} {'spout/s':>9} {'exec/s':>9} {'ovh us/call':>11} {'lat ms':>7}"
    )
    for name, graph, max_tuples in cases:
        best = min(
            (measure(graph, max_tuples) for _ in range(args.repeats)), key=lambda r: r["wall_s"]
        )
        print(
            f"{name:<10} {best['wall_s']:>7.2f} {best['spout_per_s']:>9,.0f} {best['exec_per_s']:>9,.0f} "
            f"{best['overhead_us']:>11.1f} {best['latency_ms']:>7.2f}"
        )
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"peak RSS {peak_mb:.0f} MB")


if __name__ == "__main__":
    main()
