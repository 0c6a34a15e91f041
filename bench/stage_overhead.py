"""The stage machinery's cost per tuple, in one process, without the JVM.

``bench/spark_adclicks.py`` measures whole Spark runs, where the JVM and two
Python processes per task share the cores and the figures move ±15% run to
run. This script runs the adclicks stages exactly as a Spark task does
(``stormshift.engines.spark.task.stage.run_partition``: sort, decode, host, route,
rows, fenced snapshot and stats writes in a real Redis; the imported modules
frozen out of the garbage collector's walks, as in a worker of
``stormshift/engines/spark/runtime/daemon.py``), feeding each stage the Arrow rows the
previous one produced (parse_bolt reads its lines from the data file through a
read row, as it does on Spark), and compares the time per tuple with the user's
bare ``process()`` (emit/ack as no-ops). The difference is the framework's cost
per tuple inside a Spark task::

    python bench/stage_overhead.py [--tuples 200000] [--rounds 5] [--redis redis://127.0.0.1:6379] [--json]
"""

from __future__ import annotations

import argparse
import gc
import json
import sys
import time
import uuid
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "bench"))
sys.path.insert(0, str(REPO))

import spark_adclicks as adclicks  # the same graph and data as the Spark bench


def _input_table(layout: Any, spout: str, lines: list[str]) -> Any:
    """Spout task 0's rows for the head reading it: a beacon, then one row per line."""
    import msgpack

    from stormshift.engines.spark.protocol import rows as R

    (stage,) = [s for s in layout.stages if spout in s.sources]
    out = R.RowBuilder()
    head_task = layout.first_task(stage.head)
    out.beacon(head_task)
    src = layout.graph.component(spout).task_id(0)
    code = layout.stream_code[(spout, "default")]
    pack = msgpack.Packer(use_bin_type=True).pack
    for seq, line in enumerate(lines):
        out.add(head_task, src, seq, code, pack([line]))
    import pyarrow as pa

    return pa.Table.from_batches(list(out.batches()))


def _read_row_table(layout: Any, graph: Any, args: argparse.Namespace, part: str, n: int) -> Any:
    """What the source sends the head when it reads the spout itself (the real path,
    ``spoutrange``): a beacon and one ``READ`` row for lines ``(0, n]`` of ``part``."""
    import pyarrow as pa

    from stormshift.engines.spark.source.options import Opts, ReplayPartition
    from stormshift.engines.spark.source.read.partition import read_partition

    opts = Opts(graph, "ad_log_spout", args.redis, f"bench-stage-src-{uuid.uuid4().hex[:8]}",
                n, 1000, -1, 0)
    return pa.Table.from_batches(list(read_partition(opts, ReplayPartition(0, [(part, 0, n)]))))


def _rows_for(layout: Any, outputs: Any, stage: Any, task: int) -> Any:
    """Rows of ``outputs`` whose dest is ``stage``'s task ``task``, after its beacon."""
    import pyarrow as pa
    import pyarrow.compute as pc

    from stormshift.engines.spark.protocol import rows as R

    dest = layout.first_task(stage.head) + task
    beacon = R.RowBuilder()
    beacon.beacon(dest)
    mine = outputs.filter(pc.equal(outputs.column("dest"), dest))
    return pa.concat_tables([pa.Table.from_batches(list(beacon.batches())), mine])


def _run(jobs: dict[str, Any], table: Any) -> tuple[float, Any]:
    """``(seconds, output table)`` of one ``run_partition`` call."""
    import pyarrow as pa

    from stormshift.engines.spark.protocol import rows as R
    from stormshift.engines.spark.task.stage import run_partition

    batches = table.to_batches(max_chunksize=1 << 16)
    started = time.perf_counter()
    out = list(run_partition(jobs, iter(batches)))
    took = time.perf_counter() - started
    return took, (pa.Table.from_batches(out) if out else R.SCHEMA.empty_table())


def measure(args: argparse.Namespace) -> dict[str, dict[str, float]]:
    from stormshift.engines.spark.protocol import rows as R
    from stormshift.engines.spark.protocol.layout import Layout
    from stormshift.engines.spark.task.sink import SinkSpec
    from stormshift.engines.spark.task.stage import StageJob

    # Two files and two spout tasks, as the Spark bench: parse_bolt (par 2) then runs on
    # the source's partitions and reads its range itself; task 0's file is measured.
    per_file = max(args.tuples, 1000)
    data = adclicks.ensure_data(2 * per_file, 2 * per_file, 2,
                                Path(adclicks.tempfile.gettempdir()) / "stormshift-bench")
    graph = adclicks.adclicks_on_files(data, 2)
    layout = Layout(graph)
    with open(min(data.glob("part-*.jsonl")), encoding="utf-8") as fh:
        lines = [line.rstrip("\n") for line in fh][: args.tuples]
    namespace = f"bench-stage-{uuid.uuid4().hex[:12]}"
    by_head = {s.head: s for s in layout.stages}
    ctr, spent = by_head["ads_ctr_bolt"], by_head["client_spent_bolt"]
    first_file = min(data.glob("part-*.jsonl"))
    if args.parse_input == "rows":
        source = _input_table(layout, "ad_log_spout", lines)
    else:
        source = _read_row_table(layout, graph, args, first_file.name, len(lines))
    best: dict[str, float] = {}
    counts: dict[str, int] = {}
    from stormshift.engines.spark.runtime.daemon import freeze_modules

    freeze_modules()  # as a Spark worker of stormshift's daemon: the collector skips the modules
    try:
        for round_no in range(args.rounds):
            txid = round_no + 1

            def job(stage: Any, txid: int = txid) -> Any:
                return StageJob(layout, stage, txid, frozenset(), args.redis, namespace,
                                b"bench-key", SinkSpec("drop"))

            jobs = {s.head: job(s) for s in layout.stages}
            gc.collect()
            took, parsed = _run(jobs, source)
            best["parse_bolt"] = min(best.get("parse_bolt", float("inf")), took)
            counts["parse_bolt"] = len(lines)
            for stage in (ctr, spent):
                total = 0.0
                n = 0
                for task in range(stage.par):
                    table = _rows_for(layout, parsed, stage, task)
                    n += R.tuple_count(table)
                    took, _ = _run(jobs, table)
                    total += took
                best[stage.head] = min(best.get(stage.head, float("inf")), total)
                counts[stage.head] = n
    finally:
        adclicks._delete_namespace(args.redis, namespace)
    bare = _bare_ns(graph, lines, args.rounds)
    return {name: {"stage_ns": best[name] / counts[name] * 1e9, "bare_ns": bare[name],
                   "tuples": counts[name]} for name in best}


def _bare_ns(graph: Any, lines: list[str], rounds: int) -> dict[str, float]:
    """The bolts' own ``process()`` per tuple (prebuilt tuples, emit/ack no-ops)."""
    from stormshift.adapters.tuples import TupleFactory

    sys.path.insert(0, str(adclicks.EXAMPLE / "src"))
    from bolts.parse import parse_line

    parsed = [v for v in (adclicks._try(parse_line, line) for line in lines) if v is not None]
    out = {}
    for component, source, rows in (("parse_bolt", "ad_log_spout", [[line] for line in lines]),
                                     ("ads_ctr_bolt", "parse_bolt", parsed),
                                     ("client_spent_bolt", "parse_bolt", parsed)):
        factory = TupleFactory(graph, component)
        tuples = [factory.make(source, "default", 1, v, str(i)) for i, v in enumerate(rows)]
        chunks = [tuples[i:i + 1000] for i in range(0, len(tuples), 1000)]
        out[component] = adclicks._per_tuple_ns(adclicks._bare_bolt(graph, component), chunks, rounds)
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--tuples", type=int, default=200_000)
    p.add_argument("--rounds", type=int, default=5, help="best of N runs per stage")
    p.add_argument("--redis", default="redis://127.0.0.1:6379")
    p.add_argument("--parse-input", choices=("read", "rows"), default="read",
                   help="read: parse_bolt reads the spout's file range itself (a read row, as "
                        "on Spark); rows: it gets the lines as rows (before spoutrange)")
    p.add_argument("--json", action="store_true", help="one JSON line: stage -> tuples, bare_ns, "
                   "stage_ns (per tuple), for bench/compiled_modules.py")
    args = p.parse_args(argv)
    result = measure(args)
    from stormshift import native

    if args.json:
        print(json.dumps({"hot_path": native.summary(), "stages": result}))
        return 0

    print(native.summary())
    print(f"adclicks stages in one process, {args.tuples:,} lines, best of {args.rounds} "
          f"(run_partition with real Redis, drop sink; parse input: {args.parse_input})")
    print(f"{'stage':>18} {'tuples':>9} {'bare process()':>15} {'in the stage':>13} {'framework':>10}")
    for name, r in result.items():
        print(f"{name:>18} {r['tuples']:>9,} {r['bare_ns'] / 1000:>12.2f} µs {r['stage_ns'] / 1000:>10.2f} µs "
              f"{(r['stage_ns'] - r['bare_ns']) / 1000:>+7.2f} µs")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
