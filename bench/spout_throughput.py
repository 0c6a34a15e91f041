"""The adclicks example's own spout through the planner's real path, beside the rest of the pipeline.

Issue 21 item 3 asks the example's own ``AdLogSpout`` (a generator: not replayable,
not picklable) to run at least as fast as the rest of the pipeline. One command
measures, each phase in its own process:

1. ``planner`` -- the spout through ``WalPlanner`` as Spark's planner process runs
   it (``next_tuple`` -> emit -> msgpack -> write-ahead log append in a real Redis
   -> offsets -> ``commit``: acks and trim), with no batch execution: the spout's
   own events/s. Run twice: ``pump`` (the planner's pump thread,
   ``stormshift.spout.lead_batches`` = 2) and ``inline`` (``lead_batches`` = 0:
   ``next_tuple`` runs only inside ``latestOffset``). Beside it, per tuple: the
   bare generator and the hosted ``next_tuple`` (no log), so the planner's own
   cost shows. ``--baseline-rev REV`` (repeatable) runs the same phase on another
   commit's code (``git archive``) in the same run: before/after. On a commit
   without the pump both modes run inline.
2. ``pipeline`` -- the rest of the pipeline: adclicks on ``SparkEngine`` with the
   spout swapped for ``JsonLinesSpout`` over the same lines (its planning costs
   nothing), ``--until-done``, sink ``drop``, ``--master`` (``local[2]``).
3. ``own`` -- adclicks on ``SparkEngine`` with its own spout: the whole thing;
   ``own_inline`` the same with ``lead_batches`` = 0 (no pump).
4. ``own_exec`` -- the same with the spout on executors (``stormshift.spout.executor``:
   each batch's read runs ``next_tuple`` and logs its chunk); ``own_exec_par2`` with two
   spout tasks (scaling with executors), beside ``pipeline_par2`` (the free spout in the
   same shape: 2 tasks, ``--batch`` each per batch). ``own_exec_worker`` and
   ``own_exec_par2_worker``: the same without spout hosts (``stormshift.spout.host`` false: each
   Python worker its own instance, caught up by replay). The planner phase also drives executor
   mode without Spark (``executor``: planner calls and each chunk's read in one process;
   ``executor_host``: the same with the instance in a spout host).

Ratio printed: spout events/s / pipeline events/s (target >= 1), own / pipeline, own_exec /
own_inline (executor vs planner path), own_exec_par2 / own_exec and / pipeline_par2, with
and without spout hosts; per executor-mode run, the catch-ups (instances built, tuples
re-emitted to reach the log's head).
``--profile`` prints where the planner's time goes (cProfile, per tuple). Usage::

    python bench/spout_throughput.py --events 300000 --batch 50000 [--baseline-rev main]
"""

from __future__ import annotations

import argparse
import cProfile
import json
import os
import pstats
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
EXAMPLE = REPO / "examples" / "adclicks"
SPOUT = "ad_log_spout"
sys.path.insert(0, str(BENCH))

import spark_adclicks as sa  # the bench's own helpers, beside this file


def adclicks_graph(events: int, lead_batches: int | None = None, executor: bool = False,
                   spout_par: int = 1, host: bool = True) -> Any:
    """The example as it is (its own spout), with ``spout_par`` tasks of it (task ids
    renumbered as the loader does: ``spark_adclicks.adclicks_on_files``); in executor mode
    the live instances in spout hosts (``host``, the default) or in each Python worker."""
    import dataclasses

    from stormshift.topology.graph import freeze
    from stormshift.topology.loader import load_topology

    overrides: dict[str, Any] = {"adclicks.events": events, "adclicks.windows": False}
    if lead_batches is not None:
        overrides["stormshift.spout.lead_batches"] = lead_batches
    if executor:
        overrides["stormshift.spout.executor"] = True
        overrides["stormshift.spout.host"] = host
    graph = load_topology(EXAMPLE, name="adclicks", overrides=overrides)
    if spout_par == graph.component(SPOUT).par:
        return graph
    components = {**graph.components, SPOUT: dataclasses.replace(graph.component(SPOUT), par=spout_par)}
    first, next_id = {}, 1
    for name in sorted(components):
        first[name], next_id = next_id, next_id + components[name].par
    renumbered = {n: dataclasses.replace(c, first_task_id=first[n]) for n, c in components.items()}
    return dataclasses.replace(graph, components=freeze(renumbered))


# --------------------------------------------------------------- planner -----


def drive_planner(args: argparse.Namespace, lead: int | None, profile: bool) -> dict[str, Any]:
    """Spark's planner calls on one WalPlanner until end of input: ``latestOffset``,
    ``partitions``, ``commit`` of the batch before; 10 ms between empty polls
    (Spark's ``pollingDelay``). Events/s = tuples planned / wall time; CPU = the
    process's CPU time (every thread) per tuple, steadier on a shared machine."""
    from stormshift.engines.spark.source.options import Opts, source_options
    from stormshift.engines.spark.source.planner.planner import make_planner

    namespace = f"bench-spout-{uuid.uuid4().hex[:12]}"
    opts = Opts.parse(source_options(
        adclicks_graph(args.events, lead), SPOUT, redis_url=args.redis, namespace=namespace,
        batch_max=args.batch, budget_ms=args.budget_ms, max_total=None, tick_ms=0))
    profiler = cProfile.Profile() if profile else None
    planner = make_planner(opts)
    try:
        start, batches, planned = planner.initial_offset(), 0, 0
        started, cpu = time.perf_counter(), time.process_time()
        if profiler:
            profiler.enable()
        while not start.get("fin"):
            end = planner.latest_offset(start)
            took = sum(end["t"]) - sum(start["t"])
            planner.partitions(start, end)
            if took:
                batches, planned = batches + 1, planned + took
                planner.commit(end)
            elif not end.get("fin"):
                time.sleep(0.01)
            start = end
        elapsed, cpu = time.perf_counter() - started, time.process_time() - cpu
        if profiler:
            profiler.disable()
    finally:
        planner.close()
        sa._delete_namespace(args.redis, namespace)
    out = {"events": planned, "elapsed_s": elapsed, "events_per_s": planned / elapsed,
           "batches": batches, "cpu_us": cpu * 1e6 / max(planned, 1)}
    if profiler:
        out["profile"] = top_functions(profiler, planned)
    return out


def drive_chunks(args: argparse.Namespace, host: bool = False) -> dict[str, Any]:
    """Executor mode without Spark: ``ChunkPlanner``'s calls and, between them, each batch's
    read as an executor does it (``chunk_read.chunk_entries``: ``next_tuple`` -> emit ->
    msgpack -> chunk logged in a real Redis, acks before the next read), in this process.
    Events/s = tuples read / wall time: the spout's own rate in executor mode. ``host``: the
    instance in a spout host (``spout_host.py``; CPU is then this process's only)."""
    from stormshift.engines.spark.source.options import Opts, source_options
    from stormshift.engines.spark.source.planner.planner import make_planner
    from stormshift.engines.spark.source.read.chunk_read import chunk_entries

    namespace = f"bench-spout-{uuid.uuid4().hex[:12]}"
    opts = Opts.parse(source_options(
        adclicks_graph(args.events, executor=True, host=host), SPOUT, redis_url=args.redis, namespace=namespace,
        batch_max=args.batch, budget_ms=args.budget_ms, max_total=None, tick_ms=0))
    planner = make_planner(opts)
    try:
        start, batches, read = planner.initial_offset(), 0, 0
        started, cpu = time.perf_counter(), time.process_time()
        while not start.get("fin"):
            end = planner.latest_offset(start)
            for part in planner.partitions(start, end):
                if part.number >= 0:
                    read += len(chunk_entries(opts, part.task, part.number, part.limit))
            batches += 1
            planner.commit(end)
            start = end
        elapsed, cpu = time.perf_counter() - started, time.process_time() - cpu
    finally:
        planner.close()
        sa._delete_namespace(args.redis, namespace)
        if host:
            from stormshift.engines.spark.runtime.hosts import owner_pid
            from stormshift.engines.spark.source.read.host_client import stop_hosts

            stop_hosts(owner_pid())
    return {"events": read, "elapsed_s": elapsed, "events_per_s": read / elapsed,
            "batches": batches, "cpu_us": cpu * 1e6 / max(read, 1)}


def top_functions(profiler: cProfile.Profile, tuples: int, n: int = 18) -> list[str]:
    """The ``n`` functions with the most own time, in µs per tuple (all threads that ran
    under the profiler: cProfile sees only the thread that enabled it, see ``--profile``)."""
    stats = pstats.Stats(profiler)
    rows = sorted(stats.stats.items(), key=lambda kv: kv[1][2], reverse=True)[:n]  # type: ignore[attr-defined]
    out = []
    for (path, line, name), (_cc, calls, tottime, cumtime, _) in rows:
        where = f"{Path(path).name}:{line}" if line else path
        out.append(f"{tottime * 1e6 / tuples:6.2f} µs own {cumtime * 1e6 / tuples:7.2f} µs cum "
                   f"{calls / tuples:6.2f} calls  {name} ({where})")
    return out


def hosted_rates(args: argparse.Namespace) -> dict[str, float]:
    """Per-tuple µs of the bare generator and of the hosted ``next_tuple`` (outbox cleared)."""
    from stormshift.adapters.host import SpoutHost
    from stormshift.engines.spark.runtime.worker import ensure_paths

    graph = adclicks_graph(args.events)
    ensure_paths(graph)
    import adgen

    lines = adgen.generate_lines(adgen.GenConfig(seed=7, events=args.events))
    started = time.perf_counter()
    count = sum(1 for _ in lines)
    bare = (time.perf_counter() - started) * 1e6 / count
    host = SpoutHost(graph, SPOUT, 0)
    host.open()
    emits, count = host.outbox.emits, 0
    started = time.perf_counter()
    while not host.exhausted:
        host.next_tuple()
        count += len(emits)
        emits.clear()
    hosted = (time.perf_counter() - started) * 1e6 / count
    return {"bare_us": bare, "hosted_us": hosted}


def run_planner(args: argparse.Namespace) -> dict[str, Any]:
    out: dict[str, Any] = {"hosting": hosted_rates(args)}
    for mode, lead in (("pump", 2), ("inline", 0)):
        out[mode] = drive_planner(args, lead, False)
    try:
        out["executor"] = drive_chunks(args)
        out["executor_host"] = drive_chunks(args, host=True)
    except ImportError:  # a --baseline-rev without executor-side spouts
        pass
    if args.profile:  # a run of its own: the profiler's cost stays out of the figures above
        out["inline"]["profile"] = drive_planner(args, 0, True)["profile"]
    return out


# ----------------------------------------------------------------- spark -----


def run_on_spark(args: argparse.Namespace, graph: Any) -> dict[str, Any]:
    from stormshift.engines.spark import SparkEngine
    from stormshift.engines.spark.runtime.session import worker_conf

    namespace = f"bench-spout-{uuid.uuid4().hex[:12]}"
    batches: list[tuple[int, float]] = []
    with tempfile.TemporaryDirectory(prefix="bench-spout-") as checkpoint:
        spark = sa.spark_session(args.master, "spout-throughput", worker_conf(args.master))
        engine = SparkEngine(graph, master=args.master, checkpoint_dir=checkpoint, redis_url=args.redis,
                             trigger_secs=0, until_done=True, batch_max_tuples=args.batch, sink="drop",
                             spark=spark, namespace=namespace, budget_ms=args.budget_ms)
        try:
            started = time.perf_counter()
            summary = engine.run(on_progress=lambda line: batches.extend(sa._batch_of(line)))
            elapsed = time.perf_counter() - started
            catch_up = chunk_stats(args.redis, namespace, graph)
        finally:
            spark.stop()
            sa._delete_namespace(args.redis, namespace)
    sizes, durations = [n for n, _ in batches], [ms for _, ms in batches]
    return {"events": sum(sizes), "elapsed_s": elapsed, "events_per_s": sum(sizes) / elapsed,
            "steady_events_per_s": sa.steady_rate(sizes, durations), "batches": len(sizes),
            "stop_reason": summary.stop_reason, "catch_up": catch_up}


def chunk_stats(url: str, namespace: str, graph: Any) -> dict[str, int]:
    """Executor mode: instances built, and tuples re-emitted to reach a log's head, summed
    over the spout's tasks (``engines/spark/records/chunks.py``; empty on the planner path)."""
    import redis

    from stormshift.engines.spark.records.chunks import ChunkLog

    r, total = redis.Redis.from_url(url), {}
    for task in range(graph.component(SPOUT).par):
        for name, n in ChunkLog(r, namespace, SPOUT, task).stats().items():
            total[name] = total.get(name, 0) + n
    return total


def run_pipeline(args: argparse.Namespace) -> dict[str, Any]:
    data = sa.ensure_data(args.events, args.batch, 1, Path(args.data_root))
    return run_on_spark(args, sa.adclicks_on_files(data, 1))


def run_pipeline_par2(args: argparse.Namespace) -> dict[str, Any]:
    """The pipeline in own_exec_par2's shape: 2 spout tasks, ``--batch`` lines each per batch."""
    data = sa.ensure_data(args.events, 2 * args.batch, 2, Path(args.data_root))
    return run_on_spark(args, sa.adclicks_on_files(data, 2))


def run_own(args: argparse.Namespace) -> dict[str, Any]:
    return run_on_spark(args, adclicks_graph(args.events))


def run_own_inline(args: argparse.Namespace) -> dict[str, Any]:
    return run_on_spark(args, adclicks_graph(args.events, lead_batches=0))


def run_own_exec(args: argparse.Namespace) -> dict[str, Any]:
    return run_on_spark(args, adclicks_graph(args.events, executor=True))


def run_own_exec_par2(args: argparse.Namespace) -> dict[str, Any]:
    return run_on_spark(args, adclicks_graph(args.events, executor=True, spout_par=2))


def run_own_exec_worker(args: argparse.Namespace) -> dict[str, Any]:
    """``own_exec`` with each Python worker's own instance (no spout host): catch-up by replay."""
    return run_on_spark(args, adclicks_graph(args.events, executor=True, host=False))


def run_own_exec_par2_worker(args: argparse.Namespace) -> dict[str, Any]:
    return run_on_spark(args, adclicks_graph(args.events, executor=True, spout_par=2, host=False))


PHASES = {"planner": run_planner, "pipeline": run_pipeline, "own": run_own,
          "own_inline": run_own_inline, "own_exec": run_own_exec, "own_exec_par2": run_own_exec_par2,
          "pipeline_par2": run_pipeline_par2, "own_exec_worker": run_own_exec_worker,
          "own_exec_par2_worker": run_own_exec_par2_worker}
SPARK_PHASES = ("pipeline", "own", "own_inline", "own_exec", "own_exec_worker", "pipeline_par2",
                "own_exec_par2", "own_exec_par2_worker")


# ------------------------------------------------------------------ main -----


def code_at(rev: str, root: Path) -> Path:
    """The package tree of commit ``rev`` (``git archive``), for a before/after in one run."""
    out = root / f"rev-{rev.replace('/', '_')}"
    if not out.exists():
        out.mkdir(parents=True)
        archive = subprocess.run(["git", "archive", rev, "stormshift"], cwd=REPO, check=True,
                                 capture_output=True).stdout
        subprocess.run(["tar", "-x", "-C", str(out)], input=archive, check=True)
    return out


def in_subprocess(phase: str, argv: list[str], code: Path) -> dict[str, Any]:
    env = {**os.environ, "PYTHONPATH": str(code), "STORMSHIFT_PURE": "1"}
    done = subprocess.run([sys.executable, __file__, "--phase", phase, *argv], capture_output=True,
                          text=True, cwd=REPO, env=env, check=False)
    for line in reversed(done.stdout.splitlines()):
        if line.startswith("RESULT "):
            return dict(json.loads(line[len("RESULT "):]))
    tail = (done.stderr or done.stdout).strip().splitlines()[-12:]
    return {"error": f"{phase} failed (exit {done.returncode}):\n    " + "\n    ".join(tail)}


def rate(res: dict[str, Any]) -> str:
    if "error" in res:
        return f"NOT MEASURED: {res['error']}"
    return (f"{res['events_per_s']:>9,.0f} events/s ({res['events']:,} events, "
            f"{res['elapsed_s']:.1f} s, {res['batches']} batches)")


def report(args: argparse.Namespace, results: dict[str, dict[str, Any]]) -> None:
    print(f"\nadclicks' own spout (AdLogSpout), {args.events:,} events, batch_max {args.batch:,}, "
          f"budget {args.budget_ms} ms, {args.master}, Redis {args.redis}\n")
    pipe = results.get("pipeline", {}).get("events_per_s")
    for label, res in results.items():
        if not label.startswith("planner"):
            continue
        if "error" in res:
            print(f"{label}: {rate(res)}")
            continue
        h = res["hosting"]
        print(f"{label}: bare generator {h['bare_us']:.2f} µs/tuple, hosted next_tuple "
              f"{h['hosted_us']:.2f} µs/tuple")
        for mode in ("pump", "inline", "executor", "executor_host"):
            if mode not in res:
                continue
            m = res[mode]
            ratio = f"   spout / pipeline {m['events_per_s'] / pipe:.2f}" if pipe else ""
            print(f"  {mode:>6}: {rate(m)}, CPU {m['cpu_us']:.2f} µs/tuple{ratio}")
            for row in m.get("profile", []):
                print(f"          {row}")
    for label in SPARK_PHASES:
        if label in results:
            print(f"{label:>13} on Spark: {rate(results[label])}")
    for label in SPARK_PHASES[1:]:
        own = results.get(label, {}).get("events_per_s")
        if label.startswith("own_exec") and "error" not in results.get(label, {"error": 1}):
            c = results[label].get("catch_up", {})
            print(f"  {label}: instances built {c.get('fresh', 0)}, resumed {c.get('resumed', 0)}, "
                  f"tuples re-emitted to catch up {c.get('replayed', 0):,} "
                  f"({c.get('replayed', 0) / max(results[label]['events'], 1):.2f} per event)")
        if label == "pipeline_par2":
            continue
        if own and pipe:
            print(f"  {label} (adclicks with its own spout) / pipeline with a free spout: {own / pipe:.2f}")
    ex, inline = (results.get(k, {}).get("events_per_s") for k in ("own_exec", "own_inline"))
    if ex and inline:
        print(f"  own_exec (spout on executors) / own_inline (planner path, no pump): {ex / inline:.2f}")
    par2 = results.get("own_exec_par2", {}).get("events_per_s")
    if ex and par2:
        print(f"  own_exec_par2 / own_exec (spout par 2 vs 1, executor mode): {par2 / ex:.2f}")
    pipe2 = results.get("pipeline_par2", {}).get("events_per_s")
    if pipe2 and par2:
        print(f"  own_exec_par2 / pipeline_par2 (same shape, free spout): {par2 / pipe2:.2f}")
    ex_w, par2_w = (results.get(k, {}).get("events_per_s") for k in ("own_exec_worker", "own_exec_par2_worker"))
    if pipe2 and par2_w:
        print(f"  own_exec_par2_worker / pipeline_par2 (no spout host): {par2_w / pipe2:.2f}")
    if par2 and par2_w:
        print(f"  own_exec_par2 / own_exec_par2_worker (spout host vs none, par 2): {par2 / par2_w:.2f}")
    if ex and ex_w:
        print(f"  own_exec / own_exec_worker (spout host vs none, par 1): {ex / ex_w:.2f}")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--events", type=int, default=300_000)
    p.add_argument("--batch", type=int, default=50_000, help="batch_max_tuples per spout task")
    p.add_argument("--budget-ms", type=int, default=500, help="the planner's time budget per batch")
    p.add_argument("--master", default="local[2]")
    p.add_argument("--redis", default="redis://127.0.0.1:6379")
    p.add_argument("--data-root", default=os.path.join(tempfile.gettempdir(), "stormshift-bench"))
    p.add_argument("--only", default="planner,pipeline,own,own_inline,own_exec,own_exec_worker,pipeline_par2,"
                                     "own_exec_par2,own_exec_par2_worker",
                   help="comma list of: planner, pipeline, own, own_inline, own_exec, own_exec_worker, "
                        "pipeline_par2, own_exec_par2, own_exec_par2_worker")
    p.add_argument("--baseline-rev", action="append", default=[],
                   help="also run the planner phase on this commit's code (repeatable)")
    p.add_argument("--profile", action="store_true",
                   help="cProfile one more inline run (cProfile sees one thread; the pump "
                        "thread runs the same per-tuple code)")
    p.add_argument("--phase", choices=sorted(PHASES), help=argparse.SUPPRESS)
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.phase:
        print("RESULT " + json.dumps(PHASES[args.phase](args)))
        return 0
    forwarded = [a for a in (argv if argv is not None else sys.argv[1:])]
    results: dict[str, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory(prefix="bench-spout-code-") as tmp:
        for phase in [p.strip() for p in args.only.split(",") if p.strip()]:
            print(f"running {phase} ...", file=sys.stderr, flush=True)
            results[phase] = in_subprocess(phase, forwarded, REPO)
            for rev in args.baseline_rev if phase == "planner" else []:
                print(f"running planner@{rev} ...", file=sys.stderr, flush=True)
                results[f"planner@{rev}"] = in_subprocess(phase, forwarded, code_at(rev, Path(tmp)))
    report(args, results)
    return 1 if any("error" in r for r in results.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
