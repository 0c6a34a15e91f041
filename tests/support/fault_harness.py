"""Drive ``stormshift run`` as a separate process, break it, restart it, read what it computed.

The exactly-once suite (``test_faults.py``) uses this: each case gets its own
redis-server (appendonly, fsync always, restarted by a supervisor thread when
a fault kills it), its own checkpoint and sink directories, and runs the
topology until it exits cleanly -- restarting it after each crash, as an
operator or a cluster manager would. Faults are planned through
``STORMSHIFT_FAULTS`` (``stormshift/engines/spark/diagnostics/faults.py``).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import redis

from stormshift.shadow.results import materialize, result_specs
from support.state_fixtures import RedisProcess

REPO = Path(__file__).resolve().parents[2]
# Exit codes of a run that finished: clean (0), or with dead letters (3: adclicks has
# malformed lines); anything else is a crash the harness restarts after (cli/exit_codes.py).
FINISHED = (0, 3)
MAX_RESTARTS = 6  # a case that kills the whole run at four points restarts four times
RUN_TIMEOUT_SECS = 240
#: the table the session prints at its end (tests/conftest.py), its rows recorded by tests/test_faults.py
TABLE = "faults"
HEADER = ["topology", "fault", "runs", "batches", "tuples", "retries", "fenced", "result",
          "storm (local engine)"]


_UNPICKLE_LOCK = threading.Lock()

class SupervisedRedis(RedisProcess):
    """A redis-server that comes back (same port, same appendonly dir) after a SIGKILL."""

    def __init__(self, restart_delay: float = 1.0):
        super().__init__()
        self.restart_delay = restart_delay
        self.restarts = 0
        self.pidfile = Path(self.dir) / "server.pid"
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        super().start()
        assert self.proc is not None
        self.pidfile.write_text(str(self.proc.pid), encoding="utf-8")

    def supervise(self) -> None:
        def loop() -> None:
            while not self._stop.is_set():
                proc = self.proc
                if proc is not None and proc.poll() is not None:
                    time.sleep(self.restart_delay)
                    self.start()
                    self.restarts += 1
                time.sleep(0.05)

        self._thread = threading.Thread(target=loop, name="redis-supervisor", daemon=True)
        self._thread.start()

    def close(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(5)
        super().close()


@dataclass
class Outcome:
    """What one case's runs left behind."""

    runs: int = 0
    exit_codes: list[int] = field(default_factory=list)
    summary: dict[str, Any] = field(default_factory=dict)
    sink: dict[tuple[str, str], list[list[Any]]] = field(default_factory=dict)
    declared: dict[str, Any] = field(default_factory=dict)  # label -> ResultSpec (shadow.results)
    state: dict[str, dict[str, Any]] = field(default_factory=dict)  # component -> attr -> merged
    committed: int = -1
    retried: int = 0
    fenced: int = 0
    redis_restarts: int = 0
    events: list[dict[str, Any]] = field(default_factory=list)
    dead_letters: int = 0
    logs: list[str] = field(default_factory=list)
    chunk_stats: dict[str, int] = field(default_factory=dict)  # executor-side spouts' catch-ups

    def finals(self) -> dict[str, dict[Any, Any]]:
        """Per leaf stream: key -> last emitted values (the running totals). The key is the
        first value, or the fields the topology's ``shadow.results`` declares (adclicks'
        ``[ad_id, minute]``), with the values it declares."""
        out: dict[str, dict[Any, Any]] = {}
        for (comp, stream), rows in sorted(self.sink.items()):
            spec = self.declared.get(f"{comp}:{stream}")
            if spec is not None:
                out[spec.label] = {_key(k): g.value for k, g in materialize(spec, rows).items()}
                continue
            last = out.setdefault(f"{comp}:{stream}", {})
            for values in rows:
                last[values[0]] = values[1:]
        return out

    def emit_counts(self) -> dict[str, Counter[Any]]:
        """Per leaf stream: how many emits each key got (a running total: one per processed
        event; a window: one per pane, early, on-time and late)."""
        out: dict[str, Counter[Any]] = {}
        for (comp, stream), rows in sorted(self.sink.items()):
            spec = self.declared.get(f"{comp}:{stream}")
            if spec is not None:
                out[spec.label] = Counter({_key(k): g.count for k, g in materialize(spec, rows).items()})
            else:
                out[f"{comp}:{stream}"] = Counter(v[0] for v in rows)
        return out

    @property
    def leaf_tuples(self) -> int:
        return sum(len(rows) for rows in self.sink.values())

    def zombie_outcomes(self) -> list[str]:
        return [e["zombie"] for e in self.events if "zombie" in e]


class Case:
    """One topology run to the end of its input, with faults, against its own Redis."""

    def __init__(self, tmp: Path, project: str, *, options: dict[str, Any], args: list[str],
                 faults: list[dict[str, Any]] | None = None):
        from stormshift.topology.loader import load_topology

        self.tmp, self.project, self.options, self.args = tmp, project, options, args
        self.faults = faults or []
        self.graph = load_topology(project, overrides=options)
        self.namespace = self.graph.name  # the engine's default state namespace
        self.fault_dir = tmp / "faults"
        self.fault_dir.mkdir(parents=True, exist_ok=True)
        self.checkpoint = tmp / "checkpoint"
        self.sink_dir = tmp / "sink"
        self.redis = SupervisedRedis()

    def env(self) -> dict[str, str]:
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join([str(REPO), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
        env["PYSPARK_PYTHON"] = sys.executable
        env["STORMSHIFT_FAULT_DIR"] = str(self.fault_dir)
        env["STORMSHIFT_FAULT_REDIS_PIDFILE"] = str(self.redis.pidfile)
        env["STORMSHIFT_FAULT_REDIS_URL"] = self.redis.url
        env["STORMSHIFT_FAULT_NAMESPACE"] = self.namespace
        if self.faults:
            env["STORMSHIFT_FAULTS"] = json.dumps(self.faults)
        else:
            env.pop("STORMSHIFT_FAULTS", None)
        return env

    def command(self) -> list[str]:
        cmd = [sys.executable, "-m", "stormshift", "run", self.project, "--json",
               "--redis", self.redis.url, "--checkpoint", str(self.checkpoint),
               "--sink", f"jsonl:{self.sink_dir}", *self.args]
        for key, value in self.options.items():
            cmd += ["-o", f"{key}={json.dumps(value)}"]
        return cmd

    def run(self) -> Outcome:
        """Run until a clean exit (restarting after crashes), then read the results."""
        self.redis.start()
        self.redis.supervise()
        out = Outcome()
        try:
            while out.runs <= MAX_RESTARTS:
                out.runs += 1
                code, stdout, stderr = self._once()
                out.exit_codes.append(code)
                out.logs.append(stderr[-4000:])
                if code in FINISHED:
                    out.summary = _last_json(stdout)
                    break
            else:
                raise AssertionError(f"{self.project}: no clean run after {out.runs} tries; "
                                     f"exit codes {out.exit_codes}; last stderr:\n{out.logs[-1]}")
            self._collect(out)
        finally:
            self.redis.close()
        return out

    def _once(self) -> tuple[int, str, str]:
        proc = subprocess.Popen(self.command(), cwd=self.tmp, env=self.env(), text=True,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
        try:
            stdout, stderr = proc.communicate(timeout=RUN_TIMEOUT_SECS)
        except subprocess.TimeoutExpired:
            stdout, stderr = "", "timed out"
        finally:
            _kill_group(proc.pid)  # whatever the run left (JVM, Python workers)
            proc.wait()
        return proc.returncode, stdout, stderr

    def _collect(self, out: Outcome) -> None:
        from stormshift.engines.spark.records.keys import attempts_key
        from stormshift.engines.spark.task.sink import read_jsonl_outputs
        from stormshift.state.commit import CommitLog
        from stormshift.state.deadletter import DeadLetters

        r = redis.Redis.from_url(self.redis.url)
        out.sink = read_jsonl_outputs(str(self.sink_dir))
        out.declared = {s.label: s for s in result_specs(self.graph) if not s.inferred}
        out.committed = CommitLog(r, self.namespace).committed()
        counters = {k.decode(): int(v) for k, v in r.hgetall(attempts_key(self.namespace)).items()}
        out.retried, out.fenced = counters.get("retried", 0), counters.get("fenced", 0)
        out.redis_restarts = self.redis.restarts
        out.dead_letters = DeadLetters(r, self.namespace).count()
        out.state = self._snapshots(r, out.committed)
        out.chunk_stats = self._chunk_stats(r)
        events = self.fault_dir / "events.jsonl"
        if events.exists():
            out.events = [json.loads(line) for line in events.read_text().splitlines() if line]
        out.fenced += sum(1 for z in out.zombie_outcomes() if z.startswith("FencedError"))

    def _chunk_stats(self, r: Any) -> dict[str, int]:
        """Executor-side spouts' catch-up counters, summed over spouts and tasks."""
        from stormshift.engines.spark.records.chunks import ChunkLog

        total: dict[str, int] = {}
        for spout in self.graph.spouts:
            for task in range(spout.par):
                for name, n in ChunkLog(r, self.namespace, spout.name, task).stats().items():
                    total[name] = total.get(name, 0) + n
        return total

    def _snapshots(self, r: Any, committed: int) -> dict[str, dict[str, Any]]:
        """Every bolt task's committed snapshot, merged per component (dict attrs by key)."""
        from stormshift.state.component.deltas import fold_payloads
        from stormshift.state.snapshots import SnapshotStore
        from stormshift.topology.sources import use_sources
        from stormshift.windows.state import WindowingState

        key = (self.checkpoint / "stormshift-state.key").read_text().strip().encode()
        store = SnapshotStore(r, self.namespace, key)
        merged: dict[str, dict[str, Any]] = {}
        for bolt in self.graph.bolts:
            for task in range(bolt.par):
                point = store.load(bolt.name, task, committed + 1)
                with _UNPICKLE_LOCK:  # cases run in threads; each its own project's modules
                    use_sources(self.graph.source_dirs)  # a snapshot may name the project's classes
                    attrs = fold_payloads(point.base, point.deltas) if point else {}
                comp = merged.setdefault(bolt.name, {})
                for name, value in sorted(attrs.items()):
                    if isinstance(value, WindowingState):
                        comp.setdefault(name, []).append(_windows_outcome(value))
                        continue
                    if isinstance(value, dict):
                        target = comp.setdefault(name, {})
                        overlap = set(target) & set(value)
                        assert not overlap, f"{bolt.name}.{name}: keys {sorted(overlap)[:3]} in two tasks"
                        target.update(value)
                    else:
                        comp.setdefault(name, []).append(value)
        return merged


class CaseRunner:
    """Runs the suite's cases two at a time, ahead of the tests that read them.

    Each case is a separate process tree with its own redis-server, checkpoint
    and sink, so cases are independent; most of a case's wall time is JVM
    start-up, per-batch scheduling and waiting for crashes to be noticed, so
    two at once on 2 cores take far less than twice as long. Cases are made in
    the calling thread (topology loading imports user modules) and started in
    the order given; ``outcome(key)`` waits for one (and raises what it raised).
    ``STORMSHIFT_TEST_FAULT_PARALLEL`` sets how many run at once (1: one by one).
    """

    def __init__(self, workers: int | None = None):
        workers = workers or int(os.environ.get("STORMSHIFT_TEST_FAULT_PARALLEL", "2"))
        self._pool = ThreadPoolExecutor(max_workers=max(1, workers), thread_name_prefix="fault-case")
        self._futures: dict[str, Future[Outcome]] = {}
        self._ports: set[int] = set()

    def submit(self, key: str, make: Callable[[], Case]) -> None:
        if key in self._futures:
            return
        case = make()
        while case.redis.port in self._ports:  # two cases must never share a server
            stale, case.redis = case.redis, SupervisedRedis()
            stale.close()
        self._ports.add(case.redis.port)
        self._futures[key] = self._pool.submit(case.run)

    def outcome(self, key: str, make: Callable[[], Case]) -> Outcome:
        self.submit(key, make)
        return self._futures[key].result()

    def close(self) -> None:
        self._pool.shutdown(wait=True, cancel_futures=True)


def adclicks_with_two_spout_tasks(tmp: Path) -> Path:
    """A copy of ``examples/adclicks`` under ``tmp`` whose ``AdLogSpout`` runs 2 tasks."""
    import shutil

    copy = tmp / "project"
    shutil.copytree(REPO / "examples" / "adclicks", copy)
    topology = copy / "topologies" / "adclicks.py"
    text = topology.read_text().replace("AdLogSpout.spec(par=1)", "AdLogSpout.spec(par=2)")
    assert "AdLogSpout.spec(par=2)" in text
    topology.write_text(text)
    return copy


def _kill_group(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _last_json(stdout: str) -> dict[str, Any]:
    """The ``--json`` summary: the last top-level JSON object the command printed."""
    start = stdout.find("{\n")
    if start < 0:
        start = stdout.find("{")
    try:
        return json.loads(stdout[start:]) if start >= 0 else {}
    except ValueError:
        return {}


def _key(key: tuple[Any, ...]) -> Any:
    return key[0] if len(key) == 1 else key


def _windows_outcome(state: Any) -> dict[str, Any]:
    """What two runs of the same input must agree on in a windowed bolt's state: its
    event-time snapshot, with the watermark reduced to its value (its per-partition
    entries are keyed by upstream task ids, which differ when a case runs the spout
    with another par than the baseline)."""
    snap = state.event_time_snapshot()
    mark = snap["watermark"]
    snap["watermark"] = {"watermark_ms": mark["watermark_ms"], "ended": mark["ended"]}
    return snap
