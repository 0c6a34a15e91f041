"""adclicks on a real standalone cluster: does the work spread, and how fast against by hand?

Starts what ``tests/test_cluster.py`` starts (``tests/support/cluster_harness.py``): a
standalone master and two workers on loopback (127.0.0.1 and 127.0.0.2, one
core each, so one executor each), and a redis-server of its own. Each job runs
with Spark's event log on, against the hand-written job doing the same work
(``--report``, both by default):

- ``legacy``: ``bench/spark_adclicks.py``'s two phases on the cluster master:
  ``examples/adclicks`` (windows off) reading adgen's lines from the files with
  ``JsonLinesSpout``, against its hand-written job on the same files: the same
  per-ad and per-advertiser totals.
- ``windowed``: ``bench/windowed_adclicks.py``'s two phases on the cluster master:
  stormshift's event-time report (a windowed bolt whose live state must stay where it
  runs, issue 32) against the hand-written ``withWatermark`` + ``groupBy(window)`` job,
  both checked against ``expected.compute_windowed``.
- ``submit`` (not by default, no baseline): ``stormshift submit examples/adclicks --run
  -o adclicks.windows=false``, the example's own spout generating ``--events`` lines on
  the driver, stormshift as the cluster has it installed (``--ship-stormshift``: shipped
  as a zip and run from source): the deployment path, timed.

The executors on loopback share this machine's Python, so the phases import the
installed (compiled) stormshift, as a cluster where it is pip-installed would.

From the event logs (Spark's own record of every task: executor, host, run
time) it prints per executor the tasks and their run time; per stormshift bolt, how
its tasks found their live state (reused, caught up, restored, started: after the
first batch a catch-up or restore means a task ran away from its live instance);
events/s after the first batch, and the ratio per report. Usage (heavy)::

    flock /tmp/stormshift-heavy.lock python bench/cluster_adclicks.py --events 400000 --batch 100000
"""

from __future__ import annotations

import argparse
import contextlib
import json
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
import windowed_adclicks as wa
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
EXTRA_CONFS: dict[str, str] = {}  # --conf: every job of the run, both sides


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
    confs = {**APP_CONFS, **event_log_confs(events_dir), **cluster_confs(), **EXTRA_CONFS}
    argv = [str(sa.EXAMPLE), "--master", cluster.url, "--redis", server.url(1),
            "--checkpoint", str(tmp / "ck"), "--sink", "drop", "--build-dir", str(tmp / "build"),
            "--until-done", "--batch-max-tuples", str(args.batch),  # AdLogSpout: par 1
            "-o", f"adclicks.events={args.events}", "-o", f"adclicks.seed={sa.SEED}",
            "-o", "adclicks.windows=false",  # the hand-written job's work: per-ad/advertiser totals
            "--conf", "spark.driver.host=127.0.0.1", "--conf", "spark.ui.enabled=false"]
    if not args.ship_stormshift:
        argv.append("--no-ship-stormshift")  # the executors import the installed (compiled) one
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


def run_phase(cluster: StandaloneCluster, script: Any, phase: str, argv: list[str], tmp: Path,
              label: str) -> dict[str, Any]:
    """One phase of a bench script (``spark_adclicks`` or ``windowed_adclicks``) on the
    cluster's master, in its own process; its tasks per executor from its event log."""
    events_dir = tmp / f"events-{label}"
    events_dir.mkdir()
    confs = {**APP_CONFS, **event_log_confs(events_dir), **cluster_confs(),
             "spark.driver.host": "127.0.0.1", **EXTRA_CONFS}
    # the job's session is built inside the script: its JVM's arguments come from here
    words = ["--py-files", ",".join(str(BENCH / n) for n in ("spark_adclicks.py",
                                                               "windowed_adclicks.py"))]
    for key, value in confs.items():
        words += ["--conf", f"{key}={value}"]
    env = {"PYSPARK_SUBMIT_ARGS": shlex.join([*words, "pyspark-shell"]),  # split with shlex
           "SPARK_LOCAL_IP": "127.0.0.1"}
    res = sa.run_phase_in_subprocess(phase, [*argv, "--master", cluster.url], script=script.__file__,
                                     env=env)
    res["executors"] = executor_tasks(events_dir)
    return res


def run_legacy(cluster: StandaloneCluster, phase: str, args: argparse.Namespace, tmp: Path,
               data: Path) -> dict[str, Any]:
    """``spark_adclicks.py``'s ``phase`` on the cluster; the baseline's totals checked."""
    res = run_phase(cluster, sa, phase, ["--events", str(args.events), "--batch",
                                         str(args.batch)], tmp, f"legacy-{phase}")
    if "totals" in res:
        res["check"] = sa.check_totals(res.pop("totals"), data)
    return res


def run_windowed(cluster: StandaloneCluster, phase: str, args: argparse.Namespace, tmp: Path,
                 want: dict[Any, Any]) -> dict[str, Any]:
    """``windowed_adclicks.py``'s ``phase`` on the cluster, checked against the oracle."""
    res = run_phase(cluster, wa, phase, ["--events", str(args.events), "--batch",
                                         str(args.batch)], tmp, f"windowed-{phase}")
    if "error" not in res:
        res["check"] = (wa.check_baseline if phase == "baseline" else wa.check_stormshift)(res, want)
        res.pop("minutes", None)
        res.pop("minutes_by_label", None)
    return res


def show(name: str, res: dict[str, Any]) -> None:
    if "error" in res:
        print(f"{name:>10}: NOT MEASURED — {res['error']}")
        return
    print(f"{name:>10}: {res['events']:,} events, {res['batches']} batches, "
          f"{res['steady_events_per_s']:,.0f} events/s after the first batch, batch p50 "
          f"{res['batch_ms_p50']:,.0f} ms" + (f"; {res['check']}" if "check" in res else ""))
    for component, (reused, caught_up, restored, started) in sorted(res.get("state", {}).items()):
        print(f"{'':>12}{component}: tasks reused {reused}, caught up {caught_up}, restored "
              f"{restored}, started {started}")
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
    p.add_argument("--report", default="legacy,windowed", help="legacy (totals, windows off), "
                   "windowed (the event-time report), submit (stormshift submit, no baseline)")
    p.add_argument("--ship-stormshift", action="store_true",
                   help="ship stormshift.zip to the executors (from source) instead of the installed one")
    p.add_argument("--keep", metavar="DIR", help="work in DIR and keep it (the event logs: "
                   "events-*/, per stage and task)")
    p.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE",
                   help="a Spark setting for every job of the run (both sides)")
    args = p.parse_args(argv)
    EXTRA_CONFS.update(kv.split("=", 1) for kv in args.conf)
    data = sa.ensure_data(args.events, args.batch, 2, Path(tempfile.gettempdir()) / "stormshift-bench")
    reports = args.report.split(",")
    want = wa.oracle(data) if "windowed" in reports else {}
    results: dict[str, dict[str, Any]] = {}
    with contextlib.ExitStack() as stack:
        tmp = Path(args.keep) if args.keep else Path(stack.enter_context(
            tempfile.TemporaryDirectory(prefix="bench-cluster-")))
        tmp.mkdir(parents=True, exist_ok=True)
        cluster, server = StandaloneCluster(tmp / "cluster"), RedisServer(tmp / "redis")
        try:
            cluster.start()
            for host in HOSTS:
                cluster.add_worker(host, cores=1, memory="2g")
            for report in reports:
                for job in args.only.split(","):
                    print(f"running {report} {job} on the cluster ...", file=sys.stderr, flush=True)
                    if report == "windowed":
                        results[f"{report} {job}"] = run_windowed(cluster, job, args, tmp, want)
                    elif report == "submit":
                        if job == "stormshift":
                            results["submit stormshift"] = run_stormshift(cluster, server, args, tmp)
                    else:
                        results[f"{report} {job}"] = run_legacy(cluster, job, args, tmp, data)
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
    for report in reports:
        base, ours = results.get(f"{report} baseline", {}), results.get(f"{report} stormshift", {})
        if base.get("steady_events_per_s") and ours.get("steady_events_per_s"):
            print(f"\n     {report}: ratio stormshift / hand-written (steady): "
                  f"{ours['steady_events_per_s'] / base['steady_events_per_s']:.2f}")
    return 0 if all("error" not in r for r in results.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
