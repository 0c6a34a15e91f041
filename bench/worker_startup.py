"""CPU that Spark's Python worker processes spend starting up, with and without stormshift's
daemon (``stormshift/engines/spark/runtime/daemon.py``).

A fresh local session runs a small job whose tasks import what a stage task imports
(``stormshift.engines.spark.task.stage``), a few times over; then the CPU of every Python
process Spark started (daemons and their forked workers, still alive: workers are
reused) is summed. The job's own work is a few milliseconds, so the sum is start-up:
imports, pyspark's per-task set-up. Each configuration runs in its own process (own JVM).

    python bench/worker_startup.py [--rounds 3] [--master local[2]]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from typing import Any

CONFIGS = {  # name -> (daemon module, environment)
    "pyspark.daemon (Spark's default)": ("pyspark.daemon", {}),
    # pyarrow's jemalloc thread left on: pyarrow/pandas imported by each fork
    "stormshift daemon, imports per fork": ("stormshift.engines.spark.runtime.daemon",
                                            {"JE_ARROW_MALLOC_CONF": "background_thread:true"}),
    "stormshift.engines.spark.runtime.daemon": ("stormshift.engines.spark.runtime.daemon", {}),
}


def measure(master: str, daemon: str, tasks: int) -> dict[str, Any]:
    import psutil
    from pyspark.sql import SparkSession

    spark = (SparkSession.builder.master(master).appName("worker-startup")
             .config("spark.ui.enabled", "false")
             .config("spark.python.worker.reuse", "true")
             .config("spark.python.daemon.module", daemon)
             .getOrCreate())

    def stage_like(batches: Any) -> Any:
        import stormshift.engines.spark.task.stage  # noqa: F401 - what a stage task imports

        yield from batches

    for _ in range(tasks):
        spark.range(4).repartition(2).mapInArrow(stage_like, "id long").collect()
    me = psutil.Process()
    procs = [p for p in me.children(recursive=True) if "python" in p.name().lower()]
    cpu = 0.0
    for p in procs:
        try:
            t = p.cpu_times()
            cpu += t.user + t.system
        except psutil.NoSuchProcess:
            continue
    spark.stop()
    return {"processes": len(procs), "cpu_s": cpu}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3, help="runs per configuration, interleaved")
    ap.add_argument("--jobs", type=int, default=3, help="jobs per run (workers are reused)")
    ap.add_argument("--master", default="local[2]")
    ap.add_argument("--one", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.one:
        print(json.dumps(measure(args.master, args.one, args.jobs)))
        return 0
    env = {**os.environ, "PYSPARK_PYTHON": os.environ.get("PYSPARK_PYTHON", sys.executable)}
    results: dict[str, list[dict[str, Any]]] = {name: [] for name in CONFIGS}
    for _ in range(args.rounds):
        for name, (module, extra) in CONFIGS.items():
            done = subprocess.run([sys.executable, __file__, "--one", module, "--master", args.master,
                                   "--jobs", str(args.jobs)], env={**env, **extra},
                                  capture_output=True, text=True, check=True)
            results[name].append(json.loads(done.stdout.strip().splitlines()[-1]))
    print(f"Python worker start-up, {args.master}, {args.jobs} jobs of 2 tasks, "
          f"{args.rounds} runs each (CPU of every Python process Spark started)")
    for name, runs in results.items():
        cpus = sorted(r["cpu_s"] for r in runs)
        print(f"  {name:36s} processes {runs[0]['processes']}   CPU s: median "
              f"{cpus[len(cpus) // 2]:.2f}  (min {cpus[0]:.2f}, max {cpus[-1]:.2f})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
