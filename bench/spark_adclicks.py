"""adclicks on Spark: a hand-written PySpark job vs stormshift, on the same data.

One command, three measurements on the lines of ``examples/adclicks/src/adgen.py``
(seed 7, ``--events`` lines, written once as JSON-lines files of
``--batch / --files-per-batch`` lines each, so both jobs see ``--batch`` events
per micro-batch):

1. baseline  — a hand-written Structured Streaming job: text file source,
   ``mapInArrow`` calling Python once per record (parse, validate, per-ad and
   per-advertiser totals in dicts), ``foreachBatch`` adding the totals to Redis
   idempotently (one Lua script per batch, guarded by a per-batch marker).
2. stormshift — ``examples/adclicks`` unchanged on ``SparkEngine``, its
   ``AdLogSpout`` swapped for ``JsonLinesSpout`` over the same files.
3. hosting   — in-process, no Spark: the adclicks bolts' ``process()`` per
   tuple, called bare vs through stormshift's hosts (the framework's cost).

Each Spark job runs in its own process, so peak RSS of the driver (Python and
JVM) and of a Python worker are its own. Prints events/s, the ratio, batch
duration p50/p99 and peak memory. Usage::

    python bench/spark_adclicks.py --events 2000000 --batch 500000 --master 'local[2]'
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path
from typing import Any, Self

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = REPO / "examples" / "adclicks"
SEED = 7
HASH_TAG = "{bench-adclicks}"

# ---------------------------------------------------------------- data -------


def ensure_data(events: int, batch: int, files_per_batch: int, root: Path, ads: int | None = None,
                uniform_ads: bool = False) -> Path:
    """Write the day once (same seed, same bytes); reuse it while the config matches.
    ``ads``/``uniform_ads``: adgen's catalogue size and popularity (None/False: its defaults)."""
    lines_per_file = max(1, batch // files_per_batch)
    gen = {"ads": ads} if ads is not None else {}
    if uniform_ads:
        gen["uniform_ads"] = True
    suffix = "".join(f"-{k}{v}" for k, v in sorted(gen.items()))
    out = root / f"adclicks-seed{SEED}-{events}-{lines_per_file}{suffix}"
    marker = out / "_COMPLETE"
    if marker.exists():
        return out
    sys.path.insert(0, str(EXAMPLE / "src"))
    import adgen  # the example's own generator

    out.mkdir(parents=True, exist_ok=True)
    lines = adgen.generate_lines(adgen.GenConfig(seed=SEED, events=events, **gen))
    part, written = 0, 0
    while written < events:
        count = min(lines_per_file, events - written)
        tmp = out / f".part-{part:05d}.jsonl"
        with open(tmp, "w", encoding="utf-8", newline="\n") as fh:
            for _ in range(count):
                fh.write(next(lines))
                fh.write("\n")
        os.replace(tmp, out / f"part-{part:05d}.jsonl")
        part, written = part + 1, written + count
    marker.write_text(json.dumps({"seed": SEED, "events": events, "files": part}))
    return out


# --------------------------------------------------------- measurements ------


class RssSampler:
    """Peak RSS and CPU seconds of this process, its JVM child and Python workers
    (psutil, every 250 ms). CPU is what carries over when the machine's speed moves
    between runs: a change that only saves the JVM work shows there, not in events/s.

    A sample walks the whole process table (``children(recursive=True)``): ~4.5 ms
    here, so sampling every 50 ms took ~9% of a core from the job it measured on a
    2-core machine. A pid's kind is read from its command line at every sample: the
    JVM starts as the ``spark-class`` shell script and execs java under the same pid.

    Task and spout hosts (``runtime/hosts.py``) detach from the worker that starts them
    (a session of their own, reparented to init), so they are not children: a host whose
    owner (its last argument) is one of ours counts as a Python worker, as the tasks it
    runs did in the workers before. Without them, a run with task hosts (the default)
    showed the Python workers' CPU without the bolts' (6.0 µs per event against 25.5).

    The sampler runs in this process, so its own CPU (its thread's ``thread_time``:
    reading the JVM's ~100 threads' ``/proc`` stats is most of it, ~6% of a core) is
    taken out of "driver Python": it grew with a job's length, the slower job's more.
    """

    HOST_MODULES = ("stormshift.engines.spark.task.task_host",
                    "stormshift.engines.spark.source.spouthost.spout_host")

    INTERVAL_S = 0.25

    def __init__(self) -> None:
        import psutil

        self._psutil = psutil
        self.peaks = {"driver_python": 0, "driver_jvm": 0, "python_worker": 0}
        self._cpu: dict[int, tuple[str, float]] = {}  # pid -> (kind, cumulative CPU seconds)
        self.jit_s = 0.0  # the JVM's JIT compiler threads, CPU seconds (read at the end)
        self.threads: dict[tuple[int, int], tuple[str, float]] = {}  # (jvm pid, tid) -> (name, CPU s)
        self.series: list[tuple[float, dict[str, float]]] = []  # (perf_counter, CPU s per kind)
        self._hosts: dict[int, Any] = {}  # pid -> psutil.Process: our detached hosts
        self._samples = 0
        self.own_s = 0.0  # this sampler's CPU seconds (its thread's), not the driver's work
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self._sample(self._psutil.Process(), final=True)

    @property
    def jvm_threads_s(self) -> dict[str, float]:
        """The driver JVM's CPU seconds per kind of thread (names without their numbers;
        a thread that ended is counted at its last sample)."""
        out: dict[str, float] = {}
        for name, seconds in self.threads.values():
            out[name] = out.get(name, 0.0) + seconds
        return dict(sorted(out.items(), key=lambda kv: -kv[1]))

    @property
    def cpu_s(self) -> dict[str, float]:
        """CPU seconds per kind (each pid's last cumulative reading, summed)."""
        out = {"driver_python": 0.0, "driver_jvm": 0.0, "python_worker": 0.0}
        for kind, seconds in self._cpu.values():
            out[kind] += seconds
        return out

    def _run(self) -> None:
        me = self._psutil.Process()
        while not self._stop.is_set():
            self._sample(me)
            self._stop.wait(self.INTERVAL_S)

    def _sample(self, me: Any, final: bool = False) -> None:
        started = time.thread_time()
        try:
            self._peak("driver_python", me.memory_info().rss)
            self._cpu_of(me, "driver_python", minus=self.own_s)
            children = me.children(recursive=True)
            if self._samples % 4 == 0 or final:  # a host's CPU is cumulative: found late is fine
                self._find_hosts({c.pid for c in children})
            self._samples += 1
            for child in [*children, *self._hosts.values()]:
                try:
                    kind = self._kind(child)
                    if kind is not None:
                        self._peak(kind, child.memory_info().rss)
                        self._cpu_of(child, kind)
                        if kind == "driver_jvm":
                            _thread_cpu(child.pid, self.threads)
                        if final and kind == "driver_jvm":
                            self.jit_s = max(self.jit_s, _jit_seconds(child.pid))
                except self._psutil.Error:
                    continue
        except self._psutil.Error:
            pass
        self._record()
        self.own_s += time.thread_time() - started

    def _record(self) -> None:
        """One point of ``series``: CPU seconds so far per process kind and JVM thread kind."""
        point = dict(self.cpu_s)
        for name, seconds in self.jvm_threads_s.items():
            point["jvm:" + name] = seconds
        self.series.append((time.perf_counter(), point))

    def cpu_between(self, t0: float, t1: float) -> dict[str, float]:
        """CPU seconds per kind spent between ``t0`` and ``t1`` (the nearest samples)."""
        if not self.series:
            return {}
        a = min(self.series, key=lambda p: abs(p[0] - t0))[1]
        b = min(self.series, key=lambda p: abs(p[0] - t1))[1]
        return {k: v - a.get(k, 0.0) for k, v in b.items()}

    def _cpu_of(self, proc: Any, kind: str, minus: float = 0.0) -> None:
        times = proc.cpu_times()
        self._cpu[proc.pid] = (kind, times.user + times.system - minus)

    def _find_hosts(self, ours: set[int]) -> None:
        """Add the hosts started for one of ``ours`` (pids) since the last sample."""
        for proc in self._psutil.process_iter(["pid", "cmdline"]):
            info = proc.info
            cmd = info.get("cmdline") or []
            if info["pid"] in self._hosts or info["pid"] in ours or len(cmd) < 2:
                continue
            if any(m in cmd for m in self.HOST_MODULES) and cmd[-1].isdigit() and int(cmd[-1]) in ours:
                self._hosts[info["pid"]] = proc

    @staticmethod
    def _kind(child: Any) -> str | None:
        cmd = " ".join(child.cmdline())
        if "java" in cmd:
            return "driver_jvm"
        return "python_worker" if "pyspark" in cmd or "python" in cmd else None

    def _peak(self, kind: str, rss: int) -> None:
        self.peaks[kind] = max(self.peaks[kind], rss)


def _jit_seconds(pid: int) -> float:
    """CPU seconds of a JVM's JIT compiler threads (Linux ``/proc``; 0 elsewhere)."""
    total = 0.0
    tick = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return 0.0
    for tid in tids:
        try:
            with open(f"/proc/{pid}/task/{tid}/comm", encoding="utf-8") as fh:
                if "CompilerThre" not in fh.read():
                    continue
            with open(f"/proc/{pid}/task/{tid}/stat", encoding="utf-8") as fh:
                fields = fh.read().rsplit(")", 1)[1].split()
            total += (int(fields[11]) + int(fields[12])) / tick
        except (OSError, IndexError, ValueError):
            continue
    return total


def _thread_cpu(pid: int, into: dict[tuple[int, int], tuple[str, float]]) -> None:
    """CPU seconds of every thread of ``pid`` into ``into`` (Linux ``/proc``), keyed by
    (pid, tid), named by the thread's name (``comm``, 15 characters) without digits."""
    tick = os.sysconf("SC_CLK_TCK")
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return
    for tid in tids:
        try:
            with open(f"/proc/{pid}/task/{tid}/comm", encoding="utf-8") as fh:
                name = re.sub(r"[\d#]+", "", fh.read().strip()).strip(" -")
            with open(f"/proc/{pid}/task/{tid}/stat", encoding="utf-8") as fh:
                fields = fh.read().rsplit(")", 1)[1].split()
            into[(pid, int(tid))] = (name, (int(fields[11]) + int(fields[12])) / tick)
        except (OSError, IndexError, ValueError):
            continue


def percentile(values: list[float], q: float) -> float:
    """Nearest-rank percentile (0 for no values)."""
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q / 100 * len(ordered) + 0.5) - 1))]


def _rate_from(first: int, rows: list[int], durations_ms: list[float]) -> float:
    """Events/s over the batches from index ``first`` on (0.0 when there are none)."""
    ms = sum(durations_ms[first:])
    return sum(rows[first:]) / (ms / 1000) if first > 0 and len(rows) > first and ms > 0 else 0.0


def steady_rate(rows: list[int], durations_ms: list[float]) -> float:
    """Events/s over the batches after the first (JVM and Python worker warm-up)."""
    return _rate_from(1, rows, durations_ms)


def late_rate(rows: list[int], durations_ms: list[float]) -> float:
    """Events/s over the second half of the batches: the JVM's JIT compiler keeps
    warming up for several batches, so on runs of 8+ batches this is the steady state."""
    return _rate_from(len(rows) // 2, rows, durations_ms) if len(rows) >= 4 else 0.0


def spark_session(master: str, app: str, conf: dict[str, str] | None = None) -> Any:
    from pyspark.sql import SparkSession

    builder = (
        SparkSession.builder.master(master).appName(app)
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.python.worker.reuse", "true")
        .config("spark.sql.execution.arrow.maxRecordsPerBatch", "10000")
    )
    for key, value in (conf or {}).items():
        builder = builder.config(key, value)
    return builder.getOrCreate()


# -------------------------------------------------------------- baseline -----

_BASELINE_LUA = """
if not redis.call('SET', KEYS[1], '1', 'NX') then return 0 end
for i = 1, #ARGV, 3 do
  redis.call('HINCRBY', KEYS[tonumber(ARGV[i])], ARGV[i + 1], ARGV[i + 2])
end
return 1
"""


def baseline_partition(batches: Any) -> Any:
    """mapInArrow body: Python once per record, totals per key in dicts."""
    import json as _json

    import pyarrow as pa

    fields = ("slot_id", "advertiser_id", "ad_id", "event_type", "user_id", "event_id", "ts", "cost")
    ids = ("slot_id", "advertiser_id", "ad_id", "user_id", "event_id")
    impressions: dict[str, int] = {}
    clicks: dict[str, int] = {}
    ad_spend: dict[str, int] = {}
    adv_spend: dict[str, int] = {}
    for batch in batches:
        for line in batch.column(0).to_pylist():
            try:
                rec = _json.loads(line)
            except ValueError:
                continue
            if not isinstance(rec, dict) or any(f not in rec for f in fields):
                continue
            if any(not isinstance(rec[f], str) or not rec[f] for f in ids):
                continue
            kind, cost, ts = rec["event_type"], rec["cost"], rec["ts"]
            if kind not in ("impression", "click") or type(cost) is not int or type(ts) is not int:
                continue
            if cost < 0 or ts < 0:
                continue
            ad, adv = rec["ad_id"], rec["advertiser_id"]
            if kind == "click":
                clicks[ad] = clicks.get(ad, 0) + 1
            else:
                impressions[ad] = impressions.get(ad, 0) + 1
            ad_spend[ad] = ad_spend.get(ad, 0) + cost
            adv_spend[adv] = adv_spend.get(adv, 0) + cost
    rows: dict[str, list[Any]] = {"table": [], "key": [], "value": []}
    for table, totals in ((1, impressions), (2, clicks), (3, ad_spend), (4, adv_spend)):
        for key in sorted(totals):
            rows["table"].append(table)
            rows["key"].append(key)
            rows["value"].append(totals[key])
    yield pa.RecordBatch.from_pydict(rows, schema=pa.schema(
        [("table", pa.int32()), ("key", pa.string()), ("value", pa.int64())]))


def baseline_keys(run_id: str) -> list[str]:
    tag = f"{{bench-adclicks-{run_id}}}"
    return [f"{tag}:impressions", f"{tag}:clicks", f"{tag}:ad_spend", f"{tag}:adv_spend"]


def run_baseline(args: argparse.Namespace, data: Path) -> dict[str, Any]:
    import redis

    r = redis.Redis.from_url(args.redis)
    run_id = uuid.uuid4().hex[:12]
    keys = baseline_keys(run_id)
    script = r.register_script(_BASELINE_LUA)
    batch_ms: list[float] = []
    ends: list[float] = []  # perf_counter() at the end of each batch

    def write_batch(df: Any, batch_id: int) -> None:
        started = time.perf_counter()
        argv: list[Any] = []
        for row in df.collect():  # partial totals of every partition (a few hundred rows)
            argv += [row["table"] + 1, row["key"], row["value"]]
        marker = f"{{bench-adclicks-{run_id}}}:batch:{batch_id}"
        script(keys=[marker, *keys], args=argv)
        batch_ms.append((time.perf_counter() - started) * 1000)
        ends.append(time.perf_counter())

    with RssSampler() as rss:
        spark = spark_session(args.master, "adclicks-baseline")
        source = (spark.readStream.format("text")
                  .option("maxFilesPerTrigger", args.files_per_batch).load(str(data)))
        totals = source.mapInArrow(baseline_partition, "table int, key string, value long")
        with tempfile.TemporaryDirectory(prefix="bench-baseline-") as checkpoint:
            started = time.perf_counter()
            query = (totals.writeStream.foreachBatch(write_batch)
                     .option("checkpointLocation", checkpoint)
                     .trigger(availableNow=True).start())
            query.awaitTermination()
            elapsed = time.perf_counter() - started
            progress = [p for p in query.recentProgress if p.get("numInputRows")]
        spark.stop()
    rows = sum(p["numInputRows"] for p in progress)
    durations = [p["durationMs"]["triggerExecution"] for p in progress]
    result = {
        "events": rows, "elapsed_s": elapsed, "events_per_s": rows / elapsed, "batches": len(durations),
        "steady_events_per_s": steady_rate([p["numInputRows"] for p in progress], durations),
        "late_events_per_s": late_rate([p["numInputRows"] for p in progress], durations),
        "batch_ms_p50": percentile(durations, 50), "batch_ms_p99": percentile(durations, 99),
        "peak_rss": rss.peaks, "cpu_s": rss.cpu_s, "jit_s": rss.jit_s,
        "jvm_threads_s": rss.jvm_threads_s, "steady_cpu": steady_cpu(rss, ends, progress_rows(progress)),
        "spark_ms": spark_breakdown(
            [dict(p["durationMs"]) for p in progress]),
        "totals": read_baseline_totals(r, keys),
    }
    r.delete(*keys, *r.keys(f"{{bench-adclicks-{run_id}}}:batch:*"))
    return result


def read_baseline_totals(r: Any, keys: list[str]) -> dict[str, dict[str, int]]:
    names = ("impressions", "clicks", "ad_spend", "adv_spend")
    return {n: {k.decode(): int(v) for k, v in r.hgetall(key).items()} for n, key in zip(names, keys)}


def check_totals(totals: dict[str, dict[str, int]], data: Path) -> str:
    """Compare with examples/adclicks/expected.py over the same files."""
    sys.path.insert(0, str(EXAMPLE))
    import expected

    def lines() -> Any:
        for path in sorted(data.glob("part-*.jsonl")):
            with open(path, encoding="utf-8") as fh:
                yield from (line.rstrip("\n") for line in fh)

    want = expected.compute(lines(), dedup=False)
    ok = (
        totals["impressions"] == {a: t.impressions for a, t in want.ctr_by_ad.items() if t.impressions}
        and totals["clicks"] == {a: t.clicks for a, t in want.ctr_by_ad.items() if t.clicks}
        and totals["ad_spend"] == {a: t.spend for a, t in want.ctr_by_ad.items()}
        and totals["adv_spend"] == want.spend_by_advertiser
    )
    return "equal to expected.py" if ok else "DIFFERENT from expected.py"


# ------------------------------------------------------------ stormshift -----


def adclicks_on_files(data: Path, spout_par: int, overrides: dict[str, Any] | None = None,
                      keep: set[str] | None = None, bolt_par: int | None = None,
                      bounded: bool = True) -> Any:
    """examples/adclicks with its AdLogSpout read from ``data`` by JsonLinesSpout.

    AdLogSpout is a Python spout (``stormshift.replacements`` swaps only
    JavaSpouts), so the bench swaps it in the graph: same component name,
    same ``line`` output, ``par`` = files per batch; task ids renumbered as
    the loader does (component-name order from 1). ``keep``: only these
    components (and the spout), e.g. one report of ``bench/windowed_adclicks.py``.
    ``bolt_par``: every bolt's par (None: the topology's), e.g. ``bench/scale_sweep.py``.
    ``bounded``: False for files still arriving (``bench/latency_adclicks.py``).
    """
    import dataclasses

    from stormshift.topology.graph import freeze
    from stormshift.topology.loader import load_topology, with_class

    # the legacy topology unless asked (the event-time reports: windowed_adclicks.py)
    graph = load_topology(EXAMPLE, name="adclicks", overrides={"adclicks.windows": False, **(overrides or {})})
    spout = graph.component("ad_log_spout")
    config = {**spout.config, "jsonlines.path": str(data), "jsonlines.bounded": bounded}
    # with_class reads JsonLinesSpout's capabilities (replayable): the engine decides from
    # them, so AdLogSpout's (a generic spout: hosted and logged on the driver) must not stay
    swapped = dataclasses.replace(
        with_class(spout, "stormshift.spouts.jsonlines.JsonLinesSpout", graph.source_dirs, config),
        par=spout_par, replaces=spout.class_path,
    )
    components = {**graph.components, spout.name: swapped}
    if bolt_par is not None:
        components = {n: c if n == spout.name else dataclasses.replace(c, par=bolt_par)
                      for n, c in components.items()}
    if keep is not None:
        components = {n: c for n, c in components.items() if n in keep or n == spout.name}
    first, next_id = {}, 1
    for name in sorted(components):
        first[name], next_id = next_id, next_id + components[name].par
    renumbered = {n: dataclasses.replace(c, first_task_id=first[n]) for n, c in components.items()}
    return dataclasses.replace(graph, components=freeze(renumbered))


def shuffle_grouped(graph: Any, names: tuple[str, ...]) -> Any:
    """``graph`` with ``names``' inputs shuffle-grouped: at their upstream's par they run
    fused in its stage (``layout.py``), so no tuple crosses a Spark shuffle. Not adclicks'
    semantics (an ad's counts land on both tasks): a bound on what removing the shuffle gives."""
    import dataclasses

    from stormshift.topology.graph import Grouping, GroupingKind, freeze

    shuffle = Grouping(GroupingKind.SHUFFLE)
    components = {n: dataclasses.replace(c, inputs=tuple(dataclasses.replace(i, grouping=shuffle)
                                                         for i in c.inputs))
                  if n in names else c for n, c in graph.components.items()}
    return dataclasses.replace(graph, components=freeze(components))


def run_stormshift(args: argparse.Namespace, data: Path) -> dict[str, Any]:
    try:
        from stormshift.engines.spark import SparkEngine
    except ImportError as exc:
        raise SystemExit(f"stormshift path not runnable: stormshift.engines.spark.SparkEngine is "
                         f"missing ({exc}); the Spark engine has not landed yet") from None
    graph = adclicks_on_files(data, args.files_per_batch, bolt_par=args.bolt_par,
                              overrides={"adclicks.windows": True} if args.windows else None)
    if os.environ.get("BENCH_FUSE"):  # the no-shuffle bound: bench/jvm_experiments.py
        graph = shuffle_grouped(graph, ("ads_ctr_bolt", "client_spent_bolt"))
    namespace = f"bench-adclicks-{uuid.uuid4().hex[:12]}"  # fresh state, removed afterwards
    batches: list[tuple[int, float]] = []
    ends: list[float] = []
    with RssSampler() as rss, tempfile.TemporaryDirectory(prefix="bench-stormshift-") as checkpoint:
        # The worker settings `stormshift run` uses for this master (its own session
        # is not used here, to keep the bench's settings the baseline's).
        from stormshift.engines.spark.runtime.session import (
            driver_gc_conf,
            driver_jit_conf,
            malloc_arenas,
            worker_conf,
        )

        conf = worker_conf(args.master)
        conf.update(driver_jit_conf(args.master, conf))
        conf.update(driver_gc_conf(args.master, conf))
        if os.environ.get("BENCH_SPARK_DAEMON"):  # A/B: BENCH_SPARK_DAEMON=pyspark.daemon
            conf["spark.python.daemon.module"] = os.environ["BENCH_SPARK_DAEMON"]
        conf.update(experiment_conf(conf))
        with malloc_arenas(args.master):
            spark = spark_session(args.master, "adclicks-stormshift", conf)
        # A Python listener turns every progress event into Python objects over py4j on the
        # driver, per batch: ~30% of the driver's Python samples at 10,000 events a batch (a
        # cost the hand-written side, which reads recentProgress once at the end, never paid):
        # opt-in, for the breakdown line only
        listener = progress_listener()
        if getattr(args, "spark_breakdown", False):
            spark.streams.addListener(listener)
        engine = SparkEngine(
            graph, master=args.master, checkpoint_dir=checkpoint, redis_url=args.redis,
            trigger_secs=0, until_done=True, batch_max_tuples=args.batch // args.files_per_batch,
            sink="drop", spark=spark, namespace=namespace,
        )
        steps = time_batch_steps()
        try:
            started = time.perf_counter()
            summary = engine.run(on_progress=lambda line: on_line(line, batches, ends))
            elapsed = time.perf_counter() - started
        finally:
            spark.stop()
            _delete_namespace(args.redis, namespace)
    if not batches:
        raise SystemExit("stormshift path: the engine printed no batch progress lines "
                         f"(format changed?); stop reason: {summary.stop_reason}")
    sizes, durations = [n for n, _ in batches], [ms for _, ms in batches]
    events = sum(sizes)
    return {
        "events": events, "elapsed_s": elapsed, "events_per_s": events / elapsed,
        "steady_events_per_s": steady_rate(sizes, durations),
        "late_events_per_s": late_rate(sizes, durations),
        "batches": len(durations), "batch_ms_p50": percentile(durations, 50),
        "batch_ms_p99": percentile(durations, 99), "peak_rss": rss.peaks,
        "cpu_s": rss.cpu_s, "jit_s": rss.jit_s,
        "stop_reason": summary.stop_reason, "dead_lettered": summary.total("dead_lettered"),
        "spark_ms": spark_breakdown(listener.durations),
        "jvm_threads_s": rss.jvm_threads_s,
        "steady_cpu": steady_cpu(rss, ends, sizes),
        "driver_steps_ms": {k: statistics.median(v[1:] or v) for k, v in steps.items()},
        "tuples_in": {c.name: c.tuples_in for c in summary.components.values()},
        "state": state_found(summary),
    }


def state_found(summary: Any) -> dict[str, list[int]]:
    """Per bolt whose tasks ran on Spark: how its tasks found their live state over the
    run (reused, caught up, restored, started; the summary's state table). A catch-up
    or restore is a task that ran where its live instance was not (issue 32: 0 on a
    local master, and on a cluster only after the executors change)."""
    return {s.name: [s.reused, s.caught_up, s.restored, s.started]
            for s in summary.components.values() if s.reused + s.caught_up + s.restored + s.started}


def on_line(line: str, batches: list[tuple[int, float]], ends: list[float]) -> None:
    """The engine's progress line of a batch: its size and duration, and when it ended."""
    found = _batch_of(line)
    if found:
        batches.extend(found)
        ends.append(time.perf_counter())


def progress_rows(progress: list[dict[str, Any]]) -> list[int]:
    return [p["numInputRows"] for p in progress]


def steady_cpu(rss: RssSampler, ends: list[float], sizes: list[int]) -> dict[str, float]:
    """CPU µs per event of each kind (processes; ``jvm:<thread>``) from the end of the first
    batch to the end of the last: the steady state, without start-up and the first batch."""
    if len(ends) < 2 or len(sizes) != len(ends):
        return {}
    events = sum(sizes[1:])
    spent = rss.cpu_between(ends[0], ends[-1])
    return {k: v * 1e6 / events for k, v in sorted(spent.items(), key=lambda kv: -kv[1]) if v > 0}


def time_batch_steps() -> dict[str, list[float]]:
    """Wall ms of the driver's protocol steps per batch (``driver/batch.py``), timed by
    wrapping ``BatchRunner``'s step methods in this process: 2 (ticks, redrive), 3
    (stages: the Spark job), 4 (gather counters), 5 (commit record)."""
    from stormshift.engines.spark.driver import batch

    steps: dict[str, list[float]] = {}

    def timed(name: str, fn: Any) -> Any:
        def wrapper(*a: Any, **k: Any) -> Any:
            t0 = time.perf_counter()
            try:
                return fn(*a, **k)
            finally:
                steps.setdefault(name, []).append((time.perf_counter() - t0) * 1000)
        return wrapper

    runner = batch.BatchRunner
    for name, attr in (("2 redrive", "_redrive"), ("3 stages", "_run_stages"), ("4 gather", "_gather"),
                       ("whole batch", "_batch")):
        setattr(runner, attr, timed(name, getattr(runner, attr)))
    from stormshift.state import commit

    for cls in vars(commit).values():
        if isinstance(cls, type) and hasattr(cls, "record_commit"):
            cls.record_commit = timed("5 commit", cls.record_commit)
    return steps


def experiment_conf(base: dict[str, str]) -> dict[str, str]:
    """A/B settings for the stormshift phase: ``BENCH_SPARK_CONF`` (a JSON object of Spark
    settings; its ``spark.sql.*`` keys also replace the engine's ``RUNTIME_CONF``, which
    the engine sets again when it starts) and ``BENCH_JFR=FILE`` (a Java Flight Recording
    of the driver JVM, ``bench/jfr_report.py FILE``)."""
    from stormshift.engines.spark.runtime import session

    conf = json.loads(os.environ.get("BENCH_SPARK_CONF") or "{}")
    jvm = "spark.driver.extraJavaOptions"  # the engine's JIT choice kept unless replaced
    conf.setdefault(jvm, base.get(jvm, ""))
    session.RUNTIME_CONF.update({k: v for k, v in conf.items() if k.startswith("spark.sql.")})
    if os.environ.get("BENCH_JFR"):
        conf["spark.driver.extraJavaOptions"] = (
            f"-XX:StartFlightRecording=filename={os.environ['BENCH_JFR']},settings=profile "
            + conf[jvm]).strip()
    return {k: v for k, v in conf.items() if v}


def progress_listener() -> Any:
    """Collects Spark's own per-trigger timings (``durationMs``) of the streaming query."""
    from pyspark.sql.streaming import StreamingQueryListener

    class Listener(StreamingQueryListener):
        def __init__(self) -> None:
            self.durations: list[dict[str, int]] = []

        def onQueryStarted(self, event: Any) -> None:
            pass

        def onQueryProgress(self, event: Any) -> None:
            if event.progress.numInputRows:
                self.durations.append(dict(event.progress.durationMs))

        def onQueryIdle(self, event: Any) -> None:
            pass

        def onQueryTerminated(self, event: Any) -> None:
            pass

    return Listener()


def spark_breakdown(durations: list[dict[str, int]]) -> dict[str, float]:
    """Median ms per part of a trigger over the batches after the first (JVM warm-up)."""
    steady = durations[1:] or durations
    keys = sorted({k for d in steady for k in d})
    return {k: statistics.median(d.get(k, 0) for d in steady) for k in keys}


def _delete_namespace(url: str, namespace: str) -> None:
    import redis

    r = redis.Redis.from_url(url)
    doomed = list(r.scan_iter(match=f"*{namespace}*", count=1000))
    for i in range(0, len(doomed), 500):
        r.delete(*doomed[i:i + 500])


_PROGRESS = re.compile(r"([\d,]+) spout tuples [\d,.]+ ev/s ([\d.]+) s")


def _batch_of(line: str) -> list[tuple[int, float]]:
    """``(spout tuples, duration ms)`` of a data batch's progress line (engine.progress format)."""
    found = _PROGRESS.search(line)
    if not found or int(found.group(1).replace(",", "")) == 0:
        return []
    return [(int(found.group(1).replace(",", "")), float(found.group(2)) * 1000)]


# --------------------------------------------------------------- hosting -----


def run_hosting(args: argparse.Namespace, data: Path) -> dict[str, Any]:
    """Per-tuple cost of the adclicks bolts: bare ``process()`` vs hosted."""
    try:
        from stormshift.adapters.host import BoltHost
    except ImportError as exc:
        raise SystemExit(f"hosting measurement not runnable: stormshift.adapters.host.BoltHost is "
                         f"missing ({exc}); the adapters layer has not landed yet") from None
    from stormshift.adapters.tuples import TupleFactory

    graph = adclicks_on_files(data, 1)
    with open(min(data.glob("part-*.jsonl")), encoding="utf-8") as fh:
        lines = [line.rstrip("\n") for line in itertools.islice(fh, min(args.hosting_tuples, args.batch))]
    sys.path.insert(0, str(EXAMPLE / "src"))
    from bolts.parse import parse_line

    parsed = [v for v in (_try(parse_line, line) for line in lines) if v is not None]
    cases = (("parse_bolt", "ad_log_spout", [[line] for line in lines]),
             ("ads_ctr_bolt", "parse_bolt", parsed),
             ("client_spent_bolt", "parse_bolt", parsed))
    result: dict[str, Any] = {"tuples": len(lines)}
    for component, source, rows in cases:
        tuples = [TupleFactory(graph, component).make(source, "default", 1, values, str(i))
                  for i, values in enumerate(rows)]
        chunks = [tuples[i:i + 1000] for i in range(0, len(tuples), 1000)]
        bare_ns = _per_tuple_ns(_bare_bolt(graph, component), chunks)
        host = BoltHost(graph, component, 0)
        host.open()
        one_ns = _per_tuple_ns(lambda chunk, h=host: _execute_each(h, chunk), chunks)
        many_ns = _per_tuple_ns(lambda chunk, h=host: (h.execute_many(chunk), h.outbox.drain()), chunks)
        hosted_ns = min(one_ns, many_ns)
        result[component] = {"bare_ns": bare_ns, "execute_ns": one_ns, "execute_many_ns": many_ns,
                             "hosted_ns": hosted_ns, "overhead_ns": hosted_ns - bare_ns}
    return result


def _execute_each(host: Any, chunk: list[Any]) -> None:
    """``execute`` per tuple; the outbox drained once per chunk, as an engine does per batch."""
    for tup in chunk:
        host.execute(tup)
    host.outbox.drain()


def _try(fn: Any, value: Any) -> Any:
    try:
        return fn(value)
    except ValueError:
        return None


def _bare_bolt(graph: Any, component: str) -> Any:
    """The user's bolt with emit/ack/fail as no-ops: only its own logic runs."""
    import io

    from stormshift.topology.loader import import_component_class

    cls = import_component_class(graph.component(component).class_path, graph.source_dirs)
    bolt = cls(input_stream=io.BytesIO(), output_stream=io.BytesIO(), rdb_signal=None)
    conf = dict(graph.component(component).config)
    bolt.storm_conf = conf  # as pystorm's handshake sets it (ParseBolt reads adclicks.windows)
    bolt.initialize(conf, {})
    bolt.emit = bolt.ack = bolt.fail = lambda *a, **k: None
    process = bolt.process

    def run(chunk: list[Any]) -> None:
        for tup in chunk:
            process(tup)

    return run


def _per_tuple_ns(call: Any, chunks: list[list[Any]], rounds: int = 3) -> float:
    """Best of ``rounds`` passes of ``call(chunk)`` over all chunks, in ns per tuple."""
    count = sum(len(c) for c in chunks)
    best = float("inf")
    for _ in range(rounds):
        started = time.perf_counter_ns()
        for chunk in chunks:
            call(chunk)
        best = min(best, (time.perf_counter_ns() - started) / count)
    return best


# ------------------------------------------------------------------ main -----

PHASES = {"baseline": run_baseline, "stormshift": run_stormshift, "hosting": run_hosting}


def run_phase_in_subprocess(phase: str, argv: list[str], script: str = __file__,
                            env: dict[str, str] | None = None) -> dict[str, Any]:
    """One phase of ``script`` in a fresh process (its own JVM, clean peak-RSS figures);
    ``env``: variables added to this process's for it (an A/B variant)."""
    cmd = [sys.executable, script, "--phase", phase, *argv]
    done = subprocess.run(cmd, capture_output=True, text=True, cwd=REPO, check=False,
                          env={**os.environ, "PYTHONPATH": str(REPO), **(env or {})})
    for line in reversed(done.stdout.splitlines()):
        if line.startswith("RESULT "):
            return json.loads(line[len("RESULT "):])
    tail = (done.stderr or done.stdout).strip().splitlines()[-12:]
    return {"error": f"{phase} failed (exit {done.returncode}):\n    " + "\n    ".join(tail)}


def mib(n: int) -> str:
    return f"{n / 2**20:,.0f} MiB"


def report(args: argparse.Namespace, data: Path, results: dict[str, dict[str, Any]]) -> None:
    from stormshift import native

    print(f"\nadclicks, {args.events:,} events, {args.batch:,} per batch, {args.master}, "
          f"Redis {args.redis}\ndata: {data}\n{native.summary()}\n")
    for name in ("baseline", "stormshift"):
        res = results.get(name)
        if res is None:
            continue
        if "error" in res:
            print(f"{name:>10}: NOT MEASURED — {res['error']}")
            continue
        peaks = res["peak_rss"]
        print(f"{name:>10}: {res['events_per_s']:>9,.0f} events/s overall, "
              f"{res['steady_events_per_s']:>9,.0f} after the first batch  ({res['events']:,} events in "
              f"{res['elapsed_s']:.1f}s, {res['batches']} batches)")
        if res.get("late_events_per_s"):
            print(f"{'':>10}  {res['late_events_per_s']:,.0f} events/s over the last half of the batches")
        print(f"{'':>10}  batch duration p50 {res['batch_ms_p50']:,.0f} ms, p99 {res['batch_ms_p99']:,.0f} ms")
        print(f"{'':>10}  peak RSS: driver python {mib(peaks['driver_python'])}, driver JVM "
              f"{mib(peaks['driver_jvm'])}, python worker {mib(peaks['python_worker'])}")
        if "cpu_s" in res:
            cpu, per = res["cpu_s"], 1e6 / res["events"]
            print(f"{'':>10}  CPU per event: Python workers {cpu['python_worker'] * per:.1f} µs, driver "
                  f"JVM {cpu['driver_jvm'] * per:.1f} µs (of it JIT compiler {res['jit_s'] * per:.1f} µs), "
                  f"driver Python {cpu['driver_python'] * per:.1f} µs")
        if "check" in res:
            print(f"{'':>10}  totals {res['check']}")
        if "tuples_in" in res:
            flows = ", ".join(f"{n} {v:,}" for n, v in res["tuples_in"].items() if v)
            print(f"{'':>10}  tuples in: {flows}; dead-lettered {res['dead_lettered']}; "
                  f"stop: {res['stop_reason']}")
        if res.get("jvm_threads_s"):
            top = list(res["jvm_threads_s"].items())[:8]
            print(f"{'':>10}  driver JVM CPU per event by thread: " + ", ".join(
                f"{n or '?'} {v * 1e6 / res['events']:.1f}" for n, v in top) + " µs")
        if res.get("spark_ms"):
            ms = res["spark_ms"]
            parts = ", ".join(f"{k} {v:,.0f}" for k, v in ms.items()
                              if k not in ("triggerExecution", "addBatch") and v)
            print(f"{'':>10}  Spark per trigger (median ms): {ms.get('triggerExecution', 0):,.0f} = "
                  f"batch (foreachBatch) {ms.get('addBatch', 0):,.0f} + {parts}")
    base, ours = results.get("baseline", {}), results.get("stormshift", {})
    if "events_per_s" in base and "events_per_s" in ours:
        ratio = ours["events_per_s"] / base["events_per_s"]
        steady = ours["steady_events_per_s"] / max(base["steady_events_per_s"], 1e-9)
        print(f"\n     ratio stormshift / baseline: {ratio:.2f} overall, {steady:.2f} after the first batch")
        if base.get("late_events_per_s") and ours.get("late_events_per_s"):
            late = ours["late_events_per_s"] / base["late_events_per_s"]
            print(f"     ratio over the last half of the batches: {late:.2f}")
    hosting = results.get("hosting")
    if hosting:
        print()
        if "error" in hosting:
            print(f"   hosting: NOT MEASURED — {hosting['error']}")
        else:
            print(f"   hosting: per tuple, bare process() vs hosted ({hosting['tuples']:,} tuples)")
            for component in ("parse_bolt", "ads_ctr_bolt", "client_spent_bolt"):
                h = hosting[component]
                print(f"{component:>20}: bare {h['bare_ns'] / 1000:.2f} µs, hosted "
                      f"{h['execute_ns'] / 1000:.2f} µs (execute) / {h['execute_many_ns'] / 1000:.2f} µs "
                      f"(execute_many), framework +{h['overhead_ns'] / 1000:.2f} µs")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--events", type=int, default=2_000_000)
    p.add_argument("--batch", type=int, default=500_000, help="events per micro-batch")
    p.add_argument("--files-per-batch", type=int, default=2, help="= spout tasks = input partitions")
    p.add_argument("--master", default="local[2]")
    p.add_argument("--redis", default="redis://127.0.0.1:6379")
    p.add_argument("--data-root", default=os.path.join(tempfile.gettempdir(), "stormshift-bench"))
    p.add_argument("--only", default="baseline,stormshift,hosting",
                   help="comma list of: baseline, stormshift, hosting")
    p.add_argument("--hosting-tuples", type=int, default=200_000)
    p.add_argument("--bolt-par", type=int, help="every bolt's par (default: the topology's)")
    p.add_argument("--ads", type=int, help="adgen's number of ad ids (default: its own)")
    p.add_argument("--uniform-ads", action="store_true", help="adgen: every ad equally popular")
    p.add_argument("--no-check", action="store_true", help="skip comparing totals with expected.py")
    p.add_argument("--spark-breakdown", action="store_true",
                   help="stormshift's Spark time per trigger (a listener: costs its driver time)")
    p.add_argument("--windows", action="store_true",
                   help="stormshift with the event-time reports on (the README's first command); "
                        "the hand-written job stays the legacy totals")
    p.add_argument("--phase", choices=sorted(PHASES), help=argparse.SUPPRESS)
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    data = ensure_data(args.events, args.batch, args.files_per_batch, Path(args.data_root),
                       args.ads, args.uniform_ads)
    if args.phase:
        print("RESULT " + json.dumps(PHASES[args.phase](args, data)))
        return 0
    forwarded = [a for a in (argv if argv is not None else sys.argv[1:])]
    results: dict[str, dict[str, Any]] = {}
    for phase in [p.strip() for p in args.only.split(",") if p.strip()]:
        print(f"running {phase} ...", file=sys.stderr, flush=True)
        results[phase] = run_phase_in_subprocess(phase, forwarded)
    base = results.get("baseline", {})
    if "totals" in base and not args.no_check:
        base["check"] = check_totals(base.pop("totals"), data)
    report(args, data, results)
    return 1 if any("error" in r for r in results.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
