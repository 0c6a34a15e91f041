"""adclicks under Storm's multilang protocol (pystorm) vs stormshift on Spark, same lines.

The stand-in for Storm's own path: each adclicks bolt task is a ``python -m
streamparse.run`` subprocess running pystorm's real ``Bolt.run()`` loop, as
Storm's ShellBolt starts it: the handshake (conf, context, pid dir) then one
JSON message + ``end`` per tuple on its stdin; its emits and acks (JSON, one per
line + ``end``) go to its stdout. What the JVM does between them (decode the
emits, route them, encode them for the next bolt) is done here once, before the
timed run, by a capture run of the parse tasks; the timed run then feeds every
task its own pre-encoded input through a pipe (``cat``) at once, all tasks
concurrently on the same cores, stdout to ``/dev/null``. So the figure leaves
out all of the JVM's work, the heartbeats and the tasks' start-up (a run
with the handshake only, subtracted): an upper bound of the multilang
path's events/s, which makes stormshift's ratio to it a lower bound.

Par per bolt as the topology says (2), shuffle into the parse tasks, fields
grouping after (``crc32`` of the key). The same files then run through
``bench/spark_adclicks.py``'s stormshift phase (``local[2]``) in this run;
prints events/s of each, per-task CPU per tuple, and the ratio; then the CPU
per event of each side (all of stormshift's processes, JVM start-up and JIT
included, against the bolts alone): a second ratio that moves less when other
jobs share the cores. Usage (the size of ``spark_adclicks.py``'s standard run)::

    flock /tmp/stormshift-heavy.lock python bench/multilang_adclicks.py --events 2000000 --batch 500000
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import subprocess
import sys
import tempfile
import time
import zlib
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import spark_adclicks as sa  # the bench's own helpers, beside this file

BOLTS = ("parse_bolt", "ads_ctr_bolt", "client_spent_bolt")
KEY_INDEX = {"ads_ctr_bolt": 2, "client_spent_bolt": 1}  # ad_id, advertiser_id in parse's output


def handshake(graph: Any, name: str, task: int, pid_dir: str) -> str:
    comp = graph.component(name)
    task_to_comp = {str(t): c.name for c in graph.components.values() for t in c.task_ids}
    msg = {"conf": {**dict(comp.config), "topology.name": graph.name}, "pidDir": pid_dir,
           "context": {"taskid": task, "componentid": name, "task->component": task_to_comp}}
    return json.dumps(msg) + "\nend\n"


def tuple_msg(tup_id: int, comp: str, task: int, values: list[Any]) -> str:
    """A tuple as Storm's ShellBolt writes it to the subprocess."""
    return json.dumps({"id": str(tup_id), "comp": comp, "stream": "default", "task": task,
                       "tuple": values}) + "\nend\n"


def start_task(graph: Any, name: str, index: int, infile: Path, out: Any, pid_dir: str) -> Any:
    comp = graph.component(name)
    module, _, cls = comp.class_path.rpartition(".")
    feeder = subprocess.Popen(["cat", str(infile)], stdout=subprocess.PIPE)
    proc = subprocess.Popen([sys.executable, "-m", "streamparse.run", f"{module}.{cls}"],
                            cwd=graph.source_dirs[0], stdin=feeder.stdout, stdout=out,
                            stderr=subprocess.DEVNULL)
    feeder.stdout.close()
    return proc, feeder


def write_inputs(graph: Any, name: str, par: int, rows: list[tuple[str, int, list[Any]]],
                 key: int | None, folder: Path, pid_dir: str) -> list[Path]:
    """Each task's input file: handshake, then its tuples (shuffle or by ``crc32`` of the key)."""
    comp = graph.component(name)
    files = [folder / f"{name}-{i}.in" for i in range(par)]
    with contextlib.ExitStack() as stack:
        handles = [stack.enter_context(open(f, "w", encoding="utf-8")) for f in files]
        for i, h in enumerate(handles):
            h.write(handshake(graph, name, comp.task_ids[i], pid_dir))
        for n, (src, task, values) in enumerate(rows):
            i = n % par if key is None else zlib.crc32(str(values[key]).encode()) % par
            handles[i].write(tuple_msg(n, src, task, values))
    return files


def emitted(path: Path) -> list[list[Any]]:
    """The ``tuple`` of every emit command a task wrote to its stdout."""
    out = []
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            if line.startswith("{") and '"emit"' in line:
                msg = json.loads(line)
                if msg.get("command") == "emit" and msg.get("stream", "default") == "default":
                    out.append(msg["tuple"])
    return out


def run_tasks(graph: Any, inputs: dict[str, list[Path]], pid_dir: str,
              capture: Path | None = None) -> tuple[float, dict[str, float]]:
    """Start every task at once; wall seconds until all exit, CPU seconds per bolt."""
    procs = []
    with contextlib.ExitStack() as stack:
        started = time.perf_counter()
        for name, files in inputs.items():
            for i, f in enumerate(files):
                out = (stack.enter_context(open(capture / f"{name}-{i}.out", "w")) if capture
                       else subprocess.DEVNULL)
                procs.append((name, *start_task(graph, name, i, f, out, pid_dir)))
    cpu: dict[str, float] = {}
    for name, proc, feeder in procs:
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
        feeder.wait()
        if proc.returncode not in (0, 2):  # 2: pystorm's exit when Storm (stdin) goes away
            raise SystemExit(f"{name} task exited {proc.returncode}")
        cpu[name] = cpu.get(name, 0.0) + usage.ru_utime + usage.ru_stime
    return time.perf_counter() - started, cpu


def run_multilang(args: argparse.Namespace, data: Path) -> dict[str, Any]:
    graph = sa.adclicks_on_files(data, args.files_per_batch)
    lines = [line.rstrip("\n") for p in sorted(data.glob("part-*.jsonl"))
             for line in p.read_text(encoding="utf-8").splitlines()]
    spout_task = graph.component("ad_log_spout").task_ids[0]
    par = {b: graph.component(b).par for b in BOLTS}
    with tempfile.TemporaryDirectory(prefix="bench-multilang-") as tmp:
        folder, pid_dir = Path(tmp), tempfile.mkdtemp(dir=tmp)
        parse_in = write_inputs(graph, "parse_bolt", par["parse_bolt"],
                                [("ad_log_spout", spout_task, [ln]) for ln in lines], None, folder, pid_dir)
        (folder / "capture").mkdir()
        run_tasks(graph, {"parse_bolt": parse_in}, pid_dir, folder / "capture")  # untimed
        parse_task = graph.component("parse_bolt").task_ids[0]
        parsed = [("parse_bolt", parse_task, v) for i in range(par["parse_bolt"])
                  for v in emitted(folder / "capture" / f"parse_bolt-{i}.out")]
        inputs = {"parse_bolt": parse_in}
        for b in ("ads_ctr_bolt", "client_spent_bolt"):
            inputs[b] = write_inputs(graph, b, par[b], parsed, KEY_INDEX[b], folder, pid_dir)
        wall, cpu = run_tasks(graph, inputs, pid_dir)
        (folder / "empty").mkdir()
        empty = {b: write_inputs(graph, b, par[b], [], None, folder / "empty", pid_dir) for b in BOLTS}
        start_wall, start_cpu = run_tasks(graph, empty, pid_dir)  # handshake only: startup
    wall -= start_wall
    cpu = {b: cpu[b] - start_cpu[b] for b in BOLTS}
    tuples = {"parse_bolt": len(lines), "ads_ctr_bolt": len(parsed), "client_spent_bolt": len(parsed)}
    return {"events": len(lines), "wall_s": wall, "events_per_s": len(lines) / wall, "par": par,
            "cpu_s": cpu, "startup_wall_s": start_wall, "tuples": tuples,
            "cpu_us_per_tuple": {b: cpu[b] * 1e6 / max(tuples[b], 1) for b in BOLTS}}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--events", type=int, default=1_000_000)
    p.add_argument("--batch", type=int, default=250_000, help="stormshift's events per micro-batch")
    p.add_argument("--files-per-batch", type=int, default=2)
    p.add_argument("--master", default="local[2]")
    p.add_argument("--redis", default="redis://127.0.0.1:6379")
    p.add_argument("--data-root", default=os.path.join(tempfile.gettempdir(), "stormshift-bench"))
    p.add_argument("--skip-stormshift", action="store_true")
    args = p.parse_args(argv)
    data = sa.ensure_data(args.events, args.batch, args.files_per_batch, Path(args.data_root))
    print("running multilang ...", file=sys.stderr, flush=True)
    ml = run_multilang(args, data)
    print(f"\nadclicks, {args.events:,} events, same files ({data}), {os.cpu_count()} cores\n")
    print(f" multilang: {ml['events_per_s']:>9,.0f} events/s ({ml['events']:,} events in "
          f"{ml['wall_s']:.1f} s, every task at once, less {ml['startup_wall_s']:.1f} s of the "
          f"tasks' start-up; par {ml['par']})")
    total_us = 0.0
    for b in BOLTS:
        us = ml["cpu_us_per_tuple"][b]
        total_us += us * ml["tuples"][b] / ml["events"]
        print(f"{'':>11} {b}: {us:.1f} µs CPU per tuple ({1e6 / us:,.0f} tuples/s per process), "
              f"{ml['tuples'][b]:,} tuples")
    print(f"{'':>11} all bolts: {total_us:.1f} µs CPU per event")
    if args.skip_stormshift:
        return 0
    argv_sa = ["--events", str(args.events), "--batch", str(args.batch), "--master", args.master,
               "--redis", args.redis, "--files-per-batch", str(args.files_per_batch), "--no-check"]
    print("running stormshift ...", file=sys.stderr, flush=True)
    ours = sa.run_phase_in_subprocess("stormshift", argv_sa, script=sa.__file__)
    if "error" in ours:
        print(f"stormshift: NOT MEASURED — {ours['error']}")
        return 1
    per_event = ours["cpu_s"]["python_worker"] * 1e6 / ours["events"]
    print(f"stormshift: {ours['events_per_s']:>9,.0f} events/s overall, {ours['steady_events_per_s']:,.0f} "
          f"after the first batch ({ours['batches']} batches, {args.master}); Python workers "
          f"{per_event:.1f} µs CPU per event")
    print(f"\n     ratio stormshift / multilang: {ours['events_per_s'] / ml['events_per_s']:.2f} overall, "
          f"{ours['steady_events_per_s'] / ml['events_per_s']:.2f} after the first batch")
    ours_us = {k: v * 1e6 / ours["events"] for k, v in ours["cpu_s"].items()}
    ours_total = sum(ours_us.values())
    print(f" CPU per event (the machine's work, less sensitive to other load than events/s): "
          f"multilang bolts {total_us:.1f} µs (the JVM's share not counted), stormshift "
          f"{ours_total:.1f} µs in all its processes (Python workers {ours_us['python_worker']:.1f}, "
          f"driver JVM {ours_us['driver_jvm']:.1f} with its start-up and JIT, driver Python "
          f"{ours_us['driver_python']:.1f})")
    print(f"     ratio multilang CPU / stormshift CPU per event: {total_us / ours_total:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
