"""Windowed adclicks on Spark: per-ad per-minute counts, hand-written PySpark vs stormshift.

One command, on the lines of ``examples/adclicks/src/adgen.py`` (seed 7, the
files ``bench/spark_adclicks.py`` writes: ``--batch`` events per micro-batch):

1. baseline   -- a hand-written Structured Streaming job doing the same report
   the way a PySpark user would: ``from_json``, ``withWatermark("event_time",
   "4 hours")`` (the example's allowed lateness) and
   ``groupBy(window(event_time, "1 minute"), ad_id)`` counting impressions and
   clicks, ``outputMode("update")`` into ``foreachBatch``; no Python per row.
2. stormshift -- ``examples/adclicks`` with ``adclicks.windows`` on, cut down to
   ``parse_bolt -> ad_ctr_minute_bolt -> minute_ctr_bolt`` (tumbling 1 min by
   ``ts``, early / on-time / late panes), on ``SparkEngine``, its spout swapped
   for ``JsonLinesSpout`` over the same files. Its sink keeps minute_ctr_bolt's
   rows only: cut down, parse_bolt's default stream (every parsed event, for the
   per-ad totals in the full topology) is a leaf too, and writing it out is work
   the baseline does not do (``sink_streams``).

Each phase runs in its own process; both results are checked against the
independent oracle (``expected.compute_windowed``: impressions and clicks per
ad per UTC minute) before the ratio of events/s (steady state and overall) is
printed. The target (issue 32; issue 20 asked 0.5): stormshift >= 0.7 x the baseline.

The stormshift phase needs the Spark engine's batch mode for windowed bolts
(``WindowedBolt.start_batch``); without it, it stops with a message and only
the baseline is measured.

    python bench/windowed_adclicks.py --events 2000000 --batch 500000 --master 'local[2]'
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import spark_adclicks as base

REPORT = ("parse_bolt", "ad_ctr_minute_bolt", "minute_ctr_bolt")
WATERMARK_DELAY = "4 hours"  # = the windowed bolt's allowed lateness (records come <= 3 h late)


# -------------------------------------------------------------- baseline -----
def run_baseline(args: argparse.Namespace, data: Path) -> dict[str, Any]:
    from pyspark.sql import functions as F

    counts: dict[tuple[str, int], list[int]] = {}

    def keep_latest(df: Any, batch_id: int) -> None:  # update mode: the rows that changed
        for row in df.collect():
            counts[(row["ad_id"], row["minute_ms"])] = [row["impressions"], row["clicks"]]

    schema = ("slot_id string, advertiser_id string, ad_id string, event_type string, "
              "user_id string, event_id string, ts long, cost long")
    with base.RssSampler() as rss:
        spark = base.spark_session(args.master, "windowed-adclicks-baseline")
        lines = (spark.readStream.format("text")
                 .option("maxFilesPerTrigger", args.files_per_batch).load(str(data)))
        rec = lines.select(F.from_json("value", schema).alias("r")).select("r.*")
        valid = rec.where(F.col("ad_id").isNotNull() & F.col("ts").isNotNull()
                          & F.col("event_type").isin("impression", "click"))
        report = (valid.withColumn("event_time", F.timestamp_millis("ts"))
                  .withWatermark("event_time", WATERMARK_DELAY)
                  .groupBy(F.window("event_time", "1 minute"), "ad_id")
                  .agg(F.sum(F.when(F.col("event_type") == "impression", 1).otherwise(0))
                       .alias("impressions"),
                       F.sum(F.when(F.col("event_type") == "click", 1).otherwise(0))
                       .alias("clicks"))
                  .select("ad_id", F.unix_millis(F.col("window.start")).alias("minute_ms"),
                          "impressions", "clicks"))
        with tempfile.TemporaryDirectory(prefix="bench-windowed-baseline-") as checkpoint:
            started = time.perf_counter()
            query = (report.writeStream.outputMode("update").foreachBatch(keep_latest)
                     .option("checkpointLocation", checkpoint)
                     .trigger(availableNow=True).start())
            query.awaitTermination()
            elapsed = time.perf_counter() - started
            progress = [p for p in query.recentProgress if p.get("numInputRows")]
        spark.stop()
    rows = [p["numInputRows"] for p in progress]
    durations = [p["durationMs"]["triggerExecution"] for p in progress]
    return {
        "events": sum(rows), "elapsed_s": elapsed, "events_per_s": sum(rows) / elapsed,
        "steady_events_per_s": base.steady_rate(rows, durations), "batches": len(rows),
        "batch_ms_p50": base.percentile(durations, 50), "peak_rss": rss.peaks,
        "minutes": {f"{ad}|{ms}": v for (ad, ms), v in counts.items()},
    }


# ------------------------------------------------------------ stormshift -----
def run_stormshift(args: argparse.Namespace, data: Path) -> dict[str, Any]:
    from stormshift.engines.spark import SparkEngine
    from stormshift.windows import WindowedBolt

    if not hasattr(WindowedBolt, "start_batch"):  # the Spark engine's batch mode
        raise SystemExit("the Spark engine does not run windowed bolts yet (issue 20): only "
                         "the baseline can be measured")
    graph = base.adclicks_on_files(data, args.files_per_batch, {"adclicks.windows": True},
                                   keep=set(REPORT))
    namespace = f"bench-windowed-{uuid.uuid4().hex[:12]}"
    batches: list[tuple[int, float]] = []
    with base.RssSampler() as rss, tempfile.TemporaryDirectory(prefix="bench-windowed-") as ckpt:
        from stormshift.engines.spark.runtime.session import worker_conf

        spark = base.spark_session(args.master, "windowed-adclicks-stormshift",
                                   worker_conf(args.master))
        engine = SparkEngine(graph, master=args.master, checkpoint_dir=ckpt,
                             redis_url=args.redis, trigger_secs=0, until_done=True,
                             batch_max_tuples=args.batch // args.files_per_batch,
                             spark=spark, namespace=namespace,
                             sink_streams=["minute_ctr_bolt:default"])
        try:
            started = time.perf_counter()
            summary = engine.run(on_progress=lambda line: batches.extend(base._batch_of(line)))
            elapsed = time.perf_counter() - started
        finally:
            spark.stop()
            base._delete_namespace(args.redis, namespace)
    sizes, durations = [n for n, _ in batches], [ms for _, ms in batches]
    latest = summary.latest("minute_ctr_bolt", key_len=2)
    return {
        "events": sum(sizes), "elapsed_s": elapsed, "events_per_s": sum(sizes) / elapsed,
        "steady_events_per_s": base.steady_rate(sizes, durations), "batches": len(sizes),
        "batch_ms_p50": base.percentile(durations, 50), "peak_rss": rss.peaks,
        "minutes_by_label": {f"{ad}|{minute}": [v[2], v[4]] for (ad, minute), v in latest.items()},
        "state": base.state_found(summary),
    }


# ------------------------------------------------------------------ check ----
def oracle(data: Path) -> dict[tuple[str, str], tuple[int, int]]:
    """Impressions and clicks per (ad, UTC minute label) from the files alone."""
    sys.path.insert(0, str(base.EXAMPLE / "src"))
    import adgen

    sys.path.insert(0, str(base.EXAMPLE))
    import expected

    lines = (line.rstrip("\n") for f in sorted(data.glob("part-*.jsonl")) for line in f.open())
    return expected.compute_windowed(lines, adgen.advertiser_zone, 1 << 62).ctr_by_ad_minute


def check_baseline(result: dict[str, Any], want: dict[tuple[str, str], tuple[int, int]]) -> str:
    sys.path.insert(0, str(base.EXAMPLE))
    import expected

    got = {}
    for key, (imps, clicks) in result["minutes"].items():
        ad, _, ms = key.partition("|")
        got[(ad, expected.utc_minute(int(ms)))] = (imps, clicks)
    return "equal to expected.py" if got == want else (
        f"DIFFERS from expected.py ({len(set(got.items()) ^ set(want.items()))} keys)")


def check_stormshift(result: dict[str, Any], want: dict[tuple[str, str], tuple[int, int]]) -> str:
    got = {tuple(k.split("|", 1)): tuple(v) for k, v in result["minutes_by_label"].items()}
    return "equal to expected.py" if got == want else (
        f"DIFFERS from expected.py ({len(set(got.items()) ^ set(want.items()))} keys)")


# ------------------------------------------------------------------ main -----
PHASES = {"baseline": run_baseline, "stormshift": run_stormshift}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--events", type=int, default=2_000_000)
    p.add_argument("--batch", type=int, default=500_000, help="events per micro-batch")
    p.add_argument("--files-per-batch", type=int, default=2)
    p.add_argument("--master", default="local[2]")
    p.add_argument("--redis", default="redis://127.0.0.1:6379")
    p.add_argument("--data-root", default=str(Path(tempfile.gettempdir()) / "stormshift-bench"))
    p.add_argument("--only", default="baseline,stormshift")
    p.add_argument("--phase", choices=sorted(PHASES), help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    data = base.ensure_data(args.events, args.batch, args.files_per_batch, Path(args.data_root))
    if args.phase:  # the child process of one phase
        print("RESULT " + json.dumps(PHASES[args.phase](args, data)))
        return 0
    passed = [a for a in (argv if argv is not None else sys.argv[1:])]
    results = {ph: base.run_phase_in_subprocess(ph, passed, script=__file__)
               for ph in args.only.split(",")}
    want = oracle(data)
    print(f"windowed adclicks, per-ad per-minute counts: {args.events:,} events, "
          f"{args.batch:,} per batch, {args.master}; {len(want):,} ad-minutes")
    for phase, result in results.items():
        if "error" in result:
            print(f"  {phase:<10} not measured: {result['error']}")
            continue
        check = (check_baseline if phase == "baseline" else check_stormshift)(result, want)
        print(f"  {phase:<10} {result['events_per_s']:>10,.0f} events/s overall, "
              f"{result['steady_events_per_s']:>10,.0f} steady, {result['batches']} batches; "
              f"{check}")
    if all("error" not in r for r in results.values()) and len(results) == 2:
        ratio = results["stormshift"]["steady_events_per_s"] / \
            results["baseline"]["steady_events_per_s"]
        print(f"  ratio stormshift / baseline (steady): {ratio:.2f} (target >= 0.7, issue 32)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
