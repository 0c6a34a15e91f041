"""Latency of adclicks at a fixed arrival rate: stormshift beside the hand-written job.

Events arrive at ``--rate`` events/s: a writer thread renames a new JSON-lines
file into an empty directory every ``--tick-ms`` (adgen's lines, seed 7, in
order). Both jobs read that directory as files arrive, with the same trigger
(as fast as they can: ``trigger_secs=0`` / Spark's default), and commit
their totals to Redis: the hand-written job of ``spark_adclicks.py`` (text
file source, ``mapInArrow``, ``foreachBatch`` with one Lua script per batch)
and ``examples/adclicks`` on ``SparkEngine`` (its spout swapped for
``JsonLinesSpout``, unbounded: new files are new partitions).

An event's latency is the time from its file's arrival to the end of the
commit of the batch that holds it: both jobs read files in arrival order, so
a batch holds the next ``n`` events, and its commit ends when the hand-written
job's ``foreachBatch`` returns / stormshift reports the batch committed (its
progress line comes after the commit record). The first ``--warmup`` seconds
(JVM, workers) are left out. Prints p50/p99/max per job and the ratios.
Usage::

    python bench/latency_adclicks.py --rate 1000 --seconds 30
    python bench/latency_adclicks.py --rate 10000 --seconds 30
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))
import spark_adclicks as sa  # the bench's own helpers, beside this file


class Arrivals:
    """Writes ``rate`` events/s as one file per tick; remembers when each file landed."""

    def __init__(self, folder: Path, rate: int, seconds: float, tick_ms: int):
        self.folder, self.tick = folder, tick_ms / 1000
        per_tick = max(1, round(rate * self.tick))
        ticks = max(1, round(seconds / self.tick))
        sys.path.insert(0, str(sa.EXAMPLE / "src"))
        import adgen  # the example's own generator

        self.warm = max(per_tick, rate)  # one second's events, before the clock starts
        lines = adgen.generate_lines(adgen.GenConfig(seed=sa.SEED, events=self.warm + per_tick * ticks))
        self.warm_lines = [next(lines) for _ in range(self.warm)]
        self.files = [[next(lines) for _ in range(per_tick)] for _ in range(ticks)]
        self.landed: list[tuple[float, int]] = []  # (perf_counter, events) per file, in order
        self.total = self.warm + per_tick * ticks
        self._thread = threading.Thread(target=self._write, daemon=True)

    def warm_up(self, commits: Any) -> None:
        """The first file, before the clock: the job's first batch (JVM, workers) commits it."""
        self._land("part-000000-warm.jsonl", self.warm_lines, counted=False)
        _wait(commits, self.warm, 300)
        if sum(n for _, n in commits()) < self.warm:
            raise SystemExit("the warm-up file was not committed within 300 s")

    def start(self) -> None:
        self._thread.start()

    def _land(self, name: str, lines: list[str], counted: bool = True) -> None:
        hidden = self.folder / f".{name}"
        hidden.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
        os.replace(hidden, self.folder / name)
        self.landed.append((time.perf_counter() if counted else float("-inf"), len(lines)))

    def join(self) -> None:
        self._thread.join()

    def _write(self) -> None:
        start = time.perf_counter()
        for k, lines in enumerate(self.files):
            delay = start + k * self.tick - time.perf_counter()
            if delay > 0:
                time.sleep(delay)
            self._land(f"part-{k + 1:06d}.jsonl", lines)


def latencies(landed: list[tuple[float, int]], commits: list[tuple[float, int]],
              after: float) -> list[float]:
    """Milliseconds from each event's arrival to its batch's commit (module doc), for the
    events that arrived ``after`` (perf_counter): batches hold events in arrival order."""
    out: list[float] = []
    arrivals = [t for t, n in landed for _ in range(n)]
    i = 0
    for done, n in commits:
        for t in arrivals[i:i + n]:
            if t >= after:
                out.append((done - t) * 1000)
        i += n
    return out


def _wait(commits: Any, total: int, timeout: float) -> None:
    """Until ``commits()`` (batches so far: (end, events)) hold ``total`` events."""
    deadline = time.perf_counter() + timeout
    while sum(n for _, n in commits()) < total and time.perf_counter() < deadline:
        time.sleep(0.05)


def run_baseline(args: argparse.Namespace, folder: Path) -> dict[str, Any]:
    import redis

    r = redis.Redis.from_url(args.redis)
    run_id = uuid.uuid4().hex[:12]
    keys = sa.baseline_keys(run_id)
    script = r.register_script(sa._BASELINE_LUA)
    ends: dict[int, float] = {}

    def write_batch(df: Any, batch_id: int) -> None:
        argv: list[Any] = []
        for row in df.collect():
            argv += [row["table"] + 1, row["key"], row["value"]]
        script(keys=[f"{{bench-adclicks-{run_id}}}:batch:{batch_id}", *keys], args=argv)
        ends[batch_id] = time.perf_counter()

    from pyspark import cloudpickle

    cloudpickle.register_pickle_by_value(sa)  # the workers cannot import the bench's modules
    arrivals = Arrivals(folder, args.rate, args.seconds, args.tick_ms)
    spark = sa.spark_session(args.master, "latency-baseline")
    source = spark.readStream.format("text").load(str(folder))
    totals = source.mapInArrow(sa.baseline_partition, "table int, key string, value long")
    with tempfile.TemporaryDirectory(prefix="bench-latency-") as checkpoint:
        query = (totals.writeStream.foreachBatch(write_batch)
                 .option("checkpointLocation", checkpoint).start())
        rows: dict[int, int] = {}

        def commits() -> list[tuple[float, int]]:
            for p in query.recentProgress:  # a batch's input rows, reported after it ends
                if p.get("numInputRows"):
                    rows[p["batchId"]] = p["numInputRows"]
            return [(ends[b], rows[b]) for b in sorted(rows) if b in ends]

        arrivals.warm_up(commits)
        started = time.perf_counter()
        arrivals.start()
        arrivals.join()
        _wait(commits, arrivals.total, 120)
        done = commits()
        query.stop()
    spark.stop()
    r.delete(*keys, *r.keys(f"{{bench-adclicks-{run_id}}}:batch:*"))
    return _result(arrivals, done, started + args.warmup)


def run_stormshift(args: argparse.Namespace, folder: Path) -> dict[str, Any]:
    from stormshift.engines.spark import SparkEngine
    from stormshift.engines.spark.runtime.session import worker_conf

    arrivals = Arrivals(folder, args.rate, args.seconds, args.tick_ms)
    graph = sa.adclicks_on_files(folder, 2, bounded=False,
                                 overrides={"adclicks.windows": True} if args.windows else None)
    namespace = f"bench-latency-{uuid.uuid4().hex[:12]}"
    commits: list[tuple[float, int]] = []

    def on_line(line: str) -> None:
        if os.environ.get("BENCH_LINES"):
            print(line, file=sys.stderr)
        for n, _ in sa._batch_of(line):
            commits.append((time.perf_counter(), n))

    spark = sa.spark_session(args.master, "latency-stormshift", worker_conf(args.master))
    with tempfile.TemporaryDirectory(prefix="bench-latency-") as checkpoint:
        engine = SparkEngine(graph, master=args.master, checkpoint_dir=checkpoint,
                             redis_url=args.redis, trigger_secs=0, sink="drop", spark=spark,
                             namespace=namespace)
        # runs until this phase's process ends (main: os._exit after the result)
        runner = threading.Thread(target=lambda: engine.run(on_progress=on_line), daemon=True)
        runner.start()
        arrivals.warm_up(lambda: commits)
        started = time.perf_counter()
        arrivals.start()
        arrivals.join()
        _wait(lambda: commits, arrivals.total, 120)
        result = _result(arrivals, commits, started + args.warmup)
        sa._delete_namespace(args.redis, namespace)
    return result


def _result(arrivals: Arrivals, commits: list[tuple[float, int]], after: float) -> dict[str, Any]:
    ms = sorted(latencies(arrivals.landed, commits, after))
    if not ms:
        return {"error": f"no event committed after the warm-up ({len(commits)} batches)"}
    return {"events": len(ms), "batches": len(commits), "p50_ms": sa.percentile(ms, 50),
            "p99_ms": sa.percentile(ms, 99), "max_ms": ms[-1],
            "committed": sum(n for _, n in commits), "written": arrivals.total}


PHASES = {"baseline": run_baseline, "stormshift": run_stormshift}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rate", type=int, default=1000, help="events per second")
    p.add_argument("--seconds", type=float, default=30.0, help="how long events arrive")
    p.add_argument("--tick-ms", type=int, default=100, help="one file per tick")
    p.add_argument("--warmup", type=float, default=5.0, help="seconds of arrivals not counted")
    p.add_argument("--master", default="local[2]")
    p.add_argument("--redis", default="redis://127.0.0.1:6379")
    p.add_argument("--windows", action="store_true", help="stormshift with the event-time reports")
    p.add_argument("--only", default="baseline,stormshift")
    p.add_argument("--phase", choices=sorted(PHASES), help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.phase:
        folder = Path(tempfile.mkdtemp(prefix="bench-latency-in-"))
        print("RESULT " + json.dumps(PHASES[args.phase](args, folder)), flush=True)
        import shutil

        shutil.rmtree(folder, ignore_errors=True)
        os._exit(0)  # a live engine's threads end with the process
    forwarded = list(argv if argv is not None else sys.argv[1:])
    results = {}
    for phase in [x.strip() for x in args.only.split(",") if x.strip()]:
        print(f"running {phase} ...", file=sys.stderr, flush=True)
        results[phase] = sa.run_phase_in_subprocess(phase, forwarded, script=__file__)
    print(f"\nadclicks latency, {args.rate:,} events/s for {args.seconds:g} s (one file per "
          f"{args.tick_ms} ms, first {args.warmup:g} s left out), {args.master}")
    for name, res in results.items():
        if "error" in res:
            print(f"{name:>11}: {res['error']}")
            continue
        print(f"{name:>11}: p50 {res['p50_ms']:,.0f} ms, p99 {res['p99_ms']:,.0f} ms, max "
              f"{res['max_ms']:,.0f} ms ({res['events']:,} events in {res['batches']} batches; "
              f"committed {res['committed']:,} of {res['written']:,})")
    base, ours = results.get("baseline", {}), results.get("stormshift", {})
    if "p99_ms" in base and "p99_ms" in ours:
        print(f"     ratio stormshift / hand-written: p50 {ours['p50_ms'] / base['p50_ms']:.2f}, "
              f"p99 {ours['p99_ms'] / base['p99_ms']:.2f}")
    return 1 if any("error" in r for r in results.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
