"""Windowed adclicks' stages in one process, batch after batch, without the JVM.

``bench/windowed_adclicks.py`` times whole Spark runs (±15% run to run on a shared
machine, the first batch carrying the JIT). This runs the same two stages exactly as
a Spark task runs them (``run_partition``: sort, decode, host, route, rows, fenced
snapshot and counters in a real Redis) for every batch of the same files:
``parse_bolt`` (reading its file range itself, as on Spark), then
``ad_ctr_minute_bolt`` with ``minute_ctr_bolt`` fused, fed the rows parse_bolt
produced. Each batch gets a ``BatchTime`` as the driver's ``WindowClock`` would
make it: a processing time moving 10 s per batch, the watermark from the largest
event time each parse task delivered in the batches before (minus the lag); then
a final batch with no input fires every open window (end of input). Each batch is
recorded committed, as the driver does. ``--no-reuse``: every windowed task restores
its state from Redis, as a Spark task whose Python worker did not run the task's
previous batch; ``--switch``: two workers' caches of live instances take the batches
in turn, so every task's instance is one batch stale and catches up from the deltas
(``state/component``: ``catch_up``). Output is checked against
``expected.compute_windowed``.

Prints CPU seconds and µs per event of each stage, batch by batch, and the ratio of
the windowed stage to the parse stage over the batches after the first (the
parse stage is the same work ``bench/stage_overhead.py`` measures). ``--profile
FILE`` writes a cProfile of the windowed stage's calls; under
``valgrind --tool=callgrind`` every windowed ``run_partition`` call goes through
``sys.call_tracing`` and every parse one through ``operator.call`` (C functions
nothing else on the path calls: ``callgrind_annotate --inclusive=yes`` gives
each stage's own instructions)::

    python bench/windowed_stage.py [--events 200000] [--batch 50000] [--profile FILE]
    PYTHONHASHSEED=0 valgrind --tool=callgrind --callgrind-out-file=cg.out \\
        python3.11 bench/windowed_stage.py --events 40000 --batch 10000
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import json
import operator
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "bench"))
sys.path.insert(0, str(REPO))

import spark_adclicks as base  # the same graph and data as the Spark benches
import stage_overhead  # its row helpers

REPORT = ("parse_bolt", "ad_ctr_minute_bolt", "minute_ctr_bolt")
WINDOWED = "ad_ctr_minute_bolt"
STEP_MS = 10_000  # processing time per batch
WALL = [0.0]  # wall seconds of the windowed stage's calls (Redis's waits included)


def _parse_input(layout: Any, graph: Any, redis: str, part: Path, task: int) -> Any:
    """Spout task ``task``'s rows for parse_bolt: its beacon and one READ row of ``part``."""
    import pyarrow as pa

    from stormshift.engines.spark.source.options import Opts, ReplayPartition
    from stormshift.engines.spark.source.read.partition import read_partition

    n = sum(1 for _ in part.open(encoding="utf-8"))
    opts = Opts(graph, "ad_log_spout", redis, f"bench-wstage-src-{uuid.uuid4().hex[:8]}",
                n, 1000, -1, 0)
    return pa.Table.from_batches(list(read_partition(opts, ReplayPartition(task, [(part.name, 0, n)]))))


def _run(jobs: dict[str, Any], table: Any, mark: Any, prof: cProfile.Profile | None = None
         ) -> tuple[float, Any]:
    """``(CPU seconds, output table)`` of one ``run_partition`` call, through ``mark``: CPU
    time of this process (Redis's own work not included), steadier than wall time on a
    shared machine."""
    import pyarrow as pa

    from stormshift.engines.spark.protocol import rows as R
    from stormshift.engines.spark.task.stage import run_partition

    batches = table.to_batches(max_chunksize=1 << 16)
    started, wall = time.process_time(), time.perf_counter()
    if prof is not None:
        prof.enable()
    out = mark(lambda: list(run_partition(jobs, iter(batches))))
    if prof is not None:
        prof.disable()
    took = time.process_time() - started
    WALL[0] += time.perf_counter() - wall
    return took, (pa.Table.from_batches(out) if out else R.SCHEMA.empty_table())


def _max_ts(part: Path) -> int | None:
    """The largest ``ts`` of a file's well-formed lines (what the driver's fold learns)."""
    top = None
    for line in part.open(encoding="utf-8"):
        try:
            ts = json.loads(line).get("ts")
        except (ValueError, AttributeError):
            continue
        if type(ts) is int and (top is None or ts > top):
            top = ts
    return top


def check(sink_dir: str, data: Path) -> str:
    """minute_ctr_bolt's latest pane per (ad, minute) against ``expected.compute_windowed``."""
    import windowed_adclicks

    from stormshift.engines.spark.task.sink import read_jsonl_outputs

    latest = {}
    for values in read_jsonl_outputs(sink_dir).get(("minute_ctr_bolt", "default"), []):
        latest[(values[0], values[1])] = (values[2], values[4])
    want = windowed_adclicks.oracle(data)
    return "equal to expected.py" if latest == want else (
        f"DIFFERS from expected.py ({len(set(latest.items()) ^ set(want.items()))} keys)")


def measure(args: argparse.Namespace) -> dict[str, Any]:
    from stormshift.engines.spark.protocol.layout import Layout
    from stormshift.engines.spark.runtime.daemon import freeze_modules
    from stormshift.engines.spark.runtime.worker import redis_for
    from stormshift.engines.spark.task import stage as stage_module
    from stormshift.engines.spark.task.sink import SinkSpec
    from stormshift.engines.spark.task.stage import StageJob
    from stormshift.engines.spark.task.windowing import BatchTime
    from stormshift.state.commit import CommitLog
    from stormshift.windows.watermark import WatermarkTracker
    from stormshift.windows.window import END_OF_TIME_MS, START_OF_TIME_MS

    data = base.ensure_data(args.events, args.batch, 2, Path(args.data_root))
    graph = base.adclicks_on_files(data, 2, {"adclicks.windows": True}, keep=set(REPORT))
    layout = Layout(graph)
    by_head = {s.head: s for s in layout.stages}
    parse, windowed = by_head["parse_bolt"], by_head[WINDOWED]
    lag_ms = 5_000  # AdCtrPerMinute's lag (bolts/windows.py)
    files = sorted(data.glob("part-*.jsonl"))
    namespace = f"bench-wstage-{uuid.uuid4().hex[:12]}"
    if args.sink == "jsonl" and not args.sink_dir:
        args.sink_dir = tempfile.mkdtemp(prefix="bench-wstage-sink-")
    sink = SinkSpec("jsonl", args.sink_dir, frozenset({"minute_ctr_bolt:default"})) \
        if args.sink == "jsonl" else SinkSpec("drop")  # as windowed_adclicks.py: the report
    parse_ids = [graph.component("parse_bolt").task_id(i) for i in range(parse.par)]
    tracker = WatermarkTracker(lag_ms, expected=[("parse_bolt", "events", t) for t in parse_ids])
    prof = cProfile.Profile() if args.profile else None
    rows: list[dict[str, Any]] = []
    freeze_modules()  # as a worker of stormshift's daemon: the collector skips the modules
    try:
        batches = [files[i:i + 2] for i in range(0, len(files), 2)]
        batches.append([])  # the driver's final batch: no input, every window fires
        workers: list[dict[Any, Any]] = [stage_module._CACHE._tasks, {}]
        for b, parts in enumerate(batches):
            txid, now = b + 1, (b + 1) * STEP_MS
            if args.switch:  # this batch's tasks run on the other worker (its live instances)
                stage_module._CACHE._tasks = workers[b % 2]
            final = not parts
            wm = END_OF_TIME_MS if final else (START_OF_TIME_MS if b == 0 else tracker.advance(now))
            time_ = BatchTime(now, {WINDOWED: wm}, final)
            jobs = {s.head: StageJob(layout, s, txid, frozenset(), args.redis, namespace,
                                     b"bench-key", sink, time=time_) for s in layout.stages}
            parsed, parse_s, events = [], 0.0, 0
            for task, part in enumerate(parts):
                table = _parse_input(layout, graph, args.redis, part, task)
                gc.collect()
                took, out = _run(jobs, table, operator.call)
                parse_s += took
                parsed.append(out)
                events += sum(1 for _ in part.open(encoding="utf-8"))
            import pyarrow as pa

            from stormshift.engines.spark.protocol import rows as R

            parsed_all = pa.concat_tables(parsed) if parsed else R.SCHEMA.empty_table()
            window_s = window_wall = 0.0
            for task in range(windowed.par):
                table = stage_overhead._rows_for(layout, parsed_all, windowed, task)
                gc.collect()
                if args.no_reuse:  # as a Spark task whose worker did not run its last batch
                    stage_module._CACHE._tasks.clear()
                wall = WALL[0]
                took, _ = _run(jobs, table, lambda f: sys.call_tracing(f, ()), prof)
                window_s += took
                window_wall += WALL[0] - wall
            CommitLog(redis_for(args.redis), namespace).record_commit(txid)  # the driver's step 5
            for task, part in enumerate(parts):  # the driver's fold: max event time per task
                top = _max_ts(part)
                if top is not None:
                    tracker.observe(("parse_bolt", "events", parse_ids[task]), top, now)
            rows.append({"batch": b, "events": events, "parse_s": parse_s, "window_s": window_s,
                         "window_wall_s": window_wall, "watermark_ms": wm})
    finally:
        base._delete_namespace(args.redis, namespace)
    if prof is not None:
        prof.dump_stats(args.profile)
    return {"batches": rows, "check": check(args.sink_dir, data) if sink.kind == "jsonl" else
            "not checked (drop sink)"}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--events", type=int, default=200_000)
    p.add_argument("--batch", type=int, default=50_000)
    p.add_argument("--redis", default="redis://127.0.0.1:6379")
    p.add_argument("--data-root", default=str(Path(base.tempfile.gettempdir()) / "stormshift-bench"))
    p.add_argument("--sink", choices=("drop", "jsonl"), default="jsonl",
                   help="jsonl (a temporary folder unless --sink-dir): the output is checked")
    p.add_argument("--sink-dir", default="")
    p.add_argument("--profile", help="cProfile of the windowed stage's calls to this file")
    p.add_argument("--no-reuse", action="store_true", help="every windowed task restores its "
                   "state from Redis (no live instance kept between batches)")
    p.add_argument("--switch", action="store_true", help="two workers' live instances take "
                   "the batches in turn: each catches up from the deltas since its version")
    args = p.parse_args(argv)
    result = measure(args)
    from stormshift import native

    print(native.summary())
    print(f"windowed adclicks stages in one process: {args.events:,} events, {args.batch:,} "
          f"per batch (run_partition, real Redis, {args.sink} sink)")
    print(f"{'batch':>5} {'events':>8} {'parse s':>8} {'µs/ev':>7} {'window s':>9} {'µs/ev':>7}"
          "  (CPU)")
    for r in result["batches"]:
        if not r["events"]:
            print(f"{r['batch']:>5} {'final':>8} {'':>8} {'':>7} {r['window_s']:>9.3f}  (end of "
                  "input: every open window fires)")
            continue
        print(f"{r['batch']:>5} {r['events']:>8,} {r['parse_s']:>8.3f} "
              f"{r['parse_s'] / r['events'] * 1e6:>7.2f} {r['window_s']:>9.3f} "
              f"{r['window_s'] / r['events'] * 1e6:>7.2f}")
    steady = [r for r in result["batches"][1:] if r["events"]]  # as the Spark bench: data batches
    if steady:
        ev = sum(r["events"] for r in steady)
        ps, ws = sum(r["parse_s"] for r in steady), sum(r["window_s"] for r in steady)
        ww = sum(r["window_wall_s"] for r in steady)
        print(f"after the first batch: parse {ps / ev * 1e6:.2f} µs/event, windowed "
              f"{ws / ev * 1e6:.2f} µs/event; windowed / parse {ws / ps:.2f} (CPU); windowed "
              f"wall {ww / ev * 1e6:.2f} µs/event (Redis's waits included)")
    print(f"minute_ctr_bolt's latest per (ad, minute): {result['check']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
