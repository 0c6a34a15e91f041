"""adclicks on a real standalone cluster: does the work spread across executors?

Starts what ``tests/test_cluster.py`` starts (``tests/support/cluster_harness.py``): a
standalone master and two workers on loopback (127.0.0.1 and 127.0.0.2, one
core each, so one executor each), and a redis-server of its own. Then, each
with Spark's event log on:

1. stormshift — ``stormshift submit examples/adclicks --run`` (the project and
   stormshift shipped as zips; the example's own spout, ``--events`` lines);
2. baseline  — ``bench/spark_adclicks.py``'s hand-written job on the same
   master (its text-file source over adgen's lines, same seed and count).

From the event logs (Spark's own record of every task: executor, host, run
time) it prints per executor the tasks and their run time, and the share the
busier one took; events/s from the driver's batch lines (stormshift) and
Spark's progress (baseline). Usage (heavy)::

    flock /tmp/stormshift-heavy.lock python bench/cluster_adclicks.py --events 400000 --batch 100000
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))
sys.path.insert(0, str(BENCH.parent / "tests"))
import spark_adclicks as sa  # the bench's own helpers, beside this file
from support.cluster_harness import (  # the cluster the tests start
    APP_CONFS,
    RedisServer,
    StandaloneCluster,
    event_log_confs,
    kill_group,
    start_submit,
    submit_env,
)

HOSTS = ("127.0.0.1", "127.0.0.2")


def executor_tasks(folder: Path) -> dict[str, dict[str, float]]:
    """Per executor (``id@host``): tasks ended, their run time (s), records read."""
    out: dict[str, dict[str, float]] = defaultdict(lambda: {"tasks": 0, "run_s": 0.0, "records": 0})
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
            if '"SparkListenerTaskEnd"' not in line:
                continue
            event = json.loads(line)
            info, metrics = event.get("Task Info", {}), event.get("Task Metrics") or {}
            row = out[f"{info.get('Executor ID')}@{info.get('Host')}"]
            row["tasks"] += 1
            row["run_s"] += metrics.get("Executor Run Time", 0) / 1000
            row["records"] += (metrics.get("Input Metrics") or {}).get("Records Read", 0)
    return dict(out)


def run_stormshift(cluster: StandaloneCluster, server: RedisServer, args: argparse.Namespace,
                   tmp: Path) -> dict[str, Any]:
    events_dir, log = tmp / "events-stormshift", tmp / "submit.log"
    events_dir.mkdir()
    confs = {**APP_CONFS, **event_log_confs(events_dir), **cluster_confs()}
    argv = [str(sa.EXAMPLE), "--master", cluster.url, "--redis", server.url(1),
            "--checkpoint", str(tmp / "ck"), "--sink", "drop", "--build-dir", str(tmp / "build"),
            "--until-done", "--batch-max-tuples", str(args.batch),  # AdLogSpout: par 1
            "-o", f"adclicks.events={args.events}", "-o", f"adclicks.seed={sa.SEED}",
            "--conf", "spark.driver.host=127.0.0.1", "--conf", "spark.ui.enabled=false"]
    for key, value in confs.items():
        argv += ["--conf", f"{key}={value}"]
    started = time.perf_counter()
    proc = start_submit(argv, submit_env(), log)
    try:
        code = proc.wait(args.timeout)
    finally:
        kill_group(proc)
    elapsed = time.perf_counter() - started
    text = log.read_text(errors="replace")
    if code != 0:
        return {"error": f"submit exited {code}: " + " | ".join(text.splitlines()[-8:])}
    batches = [b for line in text.splitlines() for b in sa._batch_of(line)]
    sizes, ms = [n for n, _ in batches], [d for _, d in batches]
    return {"events": sum(sizes), "wall_s": elapsed, "batches": len(sizes),
            "steady_events_per_s": sa.steady_rate(sizes, ms),
            "batch_ms_p50": sa.percentile(ms, 50), "executors": executor_tasks(events_dir)}


def cluster_confs() -> dict[str, str]:
    """Both executors registered before the first job (else the first takes early tasks)."""
    return {"spark.cores.max": "2", "spark.scheduler.minRegisteredResourcesRatio": "1.0",
            "spark.scheduler.maxRegisteredResourcesWaitingTime": "120s",
            "spark.executor.memory": "1g"}


def run_baseline(cluster: StandaloneCluster, args: argparse.Namespace, tmp: Path) -> dict[str, Any]:
    events_dir = tmp / "events-baseline"
    events_dir.mkdir()
    confs = {**APP_CONFS, **event_log_confs(events_dir), **cluster_confs(),
             "spark.driver.host": "127.0.0.1"}
    # the job's session is built inside spark_adclicks: its JVM's arguments come from here
    words = ["--py-files", str(BENCH / "spark_adclicks.py")]
    for key, value in confs.items():
        words += ["--conf", f"{key}={value}"]
    submit = shlex.join([*words, "pyspark-shell"])  # pyspark splits it with shlex
    os.environ["PYSPARK_SUBMIT_ARGS"] = submit
    os.environ["SPARK_LOCAL_IP"] = "127.0.0.1"
    try:
        res = sa.run_phase_in_subprocess("baseline", [
            "--events", str(args.events), "--batch", str(args.batch), "--master", cluster.url,
            "--no-check"], script=sa.__file__)
    finally:
        del os.environ["PYSPARK_SUBMIT_ARGS"]
    res.pop("totals", None)
    res["executors"] = executor_tasks(events_dir)
    return res


def show(name: str, res: dict[str, Any]) -> None:
    if "error" in res:
        print(f"{name:>10}: NOT MEASURED — {res['error']}")
        return
    print(f"{name:>10}: {res['events']:,} events, {res['batches']} batches, "
          f"{res['steady_events_per_s']:,.0f} events/s after the first batch, batch p50 "
          f"{res['batch_ms_p50']:,.0f} ms")
    execs = res["executors"]
    run_total = sum(e["run_s"] for e in execs.values()) or 1.0
    for key in sorted(execs):
        e = execs[key]
        print(f"{'':>12}executor {key}: {e['tasks']:,.0f} tasks, {e['run_s']:,.1f} s run time "
              f"({e['run_s'] / run_total:.0%}), {e['records']:,.0f} input records")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--events", type=int, default=400_000)
    p.add_argument("--batch", type=int, default=100_000)
    p.add_argument("--timeout", type=float, default=600)
    p.add_argument("--only", default="stormshift,baseline")
    args = p.parse_args(argv)
    sa.ensure_data(args.events, args.batch, 2, Path(tempfile.gettempdir()) / "stormshift-bench")
    results: dict[str, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory(prefix="bench-cluster-") as name:
        tmp = Path(name)
        cluster, server = StandaloneCluster(tmp / "cluster"), RedisServer(tmp / "redis")
        try:
            cluster.start()
            for host in HOSTS:
                cluster.add_worker(host, cores=1, memory="2g")
            if "stormshift" in args.only:
                print("running stormshift on the cluster ...", file=sys.stderr, flush=True)
                results["stormshift"] = run_stormshift(cluster, server, args, tmp)
            if "baseline" in args.only:
                print("running baseline on the cluster ...", file=sys.stderr, flush=True)
                results["baseline"] = run_baseline(cluster, args, tmp)
            apps = (cluster.state() or {}).get("completedapps", [])
        finally:
            cluster.stop()
            server.stop()
    print(f"\nadclicks on a standalone cluster: master + workers on {', '.join(HOSTS)} "
          f"(1 core each), {args.events:,} events, {args.batch:,} per batch\n")
    for name_, res in results.items():
        show(name_, res)
    print("\nmaster's completed apps: " + ", ".join(f"{a.get('name')} ({a.get('cores')} cores, "
          f"{a.get('duration', 0) / 1000:.0f} s)" for a in apps))
    base, ours = results.get("baseline", {}), results.get("stormshift", {})
    if base.get("steady_events_per_s") and ours.get("steady_events_per_s"):
        print(f"\n     ratio stormshift / baseline (steady): "
              f"{ours['steady_events_per_s'] / base['steady_events_per_s']:.2f}")
    return 0 if all("error" not in r for r in results.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
