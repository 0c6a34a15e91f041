"""One micro-batch in the driver: the per-batch plan and the commit protocol.

``foreachBatch(df, batch_id)`` calls ``BatchRunner``. Words: *txid* =
``base + batch_id`` (``CommitLog.bind_checkpoint`` gives ``base``, so txids
only grow across checkpoints). The protocol, one numbered step each:

1. txid of the batch; if ``committed >= txid`` the batch already committed
   before a crash: SKIPPED (return, Spark writes its commit log);
2. the batch's ticks and its time -- processing time, watermarks, end of input
   (``windows.py``) -- (recorded under the txid: a re-run sees the same ones),
   and the dead letters it redrives (claimed under the txid, same rule:
   ``state/redrive.py``, rows built by ``redrive.py``); dead letters of an
   earlier, uncommitted attempt of the txid are discarded (the run re-adds its own);
3. build one DataFrame per group of stages reading the same frames (rows
   for the heads, redriven rows included -> ``repartitionById`` -> one
   ``mapInArrow``: ``stage_groups``), the group's Storm tasks dealt to at most
   as many Spark tasks as the executors have cores, and run every group
   expected to have work in ONE Spark job (all waves in one DAG: an output read
   twice or by a later job is persisted, computed once); a group left out runs
   after it only if the records show rows for it, and a task provably idle runs
   nothing (``waves.py``): STAGES_DONE;
4. gather the tasks' counters (Redis) for progress and summary, and fold the
   windowed bolts' reports into the watermark trackers (``windows.py``);
5. record ``committed = txid`` in Redis: COMMITTED; only then return, so Spark
   writes its own commit log after ours. The txid's dead letters are final and its
   redrive claim is trimmed.

A failure in 3-5 leaves the batch FAILED and raises: Spark stops the query,
and a restart re-runs the batch id with the same input (its offset log).
"""

from __future__ import annotations

import dataclasses
import enum
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import reduce
from typing import Any

from stormshift.engines.problems import ErrorDigest
from stormshift.engines.spark.diagnostics import faults
from stormshift.engines.spark.diagnostics.profiling import profiled
from stormshift.engines.spark.driver.redrive import RedrivePlan, plan_redrive
from stormshift.engines.spark.driver.ticks import TickRecorder
from stormshift.engines.spark.driver.waves import (
    SPOUTS,
    IdleWindows,
    first_job,
    group_key,
    idle_tasks,
    stage_certain,
    stage_groups,
    stage_runs,
    waves,
)
from stormshift.engines.spark.driver.windows import WindowClock
from stormshift.engines.spark.protocol import rows as R
from stormshift.engines.spark.protocol.layout import Layout, Stage
from stormshift.engines.spark.records import batchstats
from stormshift.engines.spark.task.counters import COUNTERS, MemberStats, read_stats
from stormshift.engines.spark.task.sink import SinkSpec
from stormshift.engines.spark.task.stage import StageJob, run_partition
from stormshift.engines.spark.task.windowing import BatchTime
from stormshift.state import outage

__all__ = ["COUNTERS", "SPOUTS", "BatchResult", "BatchRunner", "BatchStatus", "stage_groups"]



class BatchStatus(str, enum.Enum):
    STARTED = "started"
    SKIPPED = "skipped"
    STAGES_DONE = "stages_done"
    COMMITTED = "committed"
    FAILED = "failed"


@dataclass
class BatchResult:
    batch_id: int
    txid: int
    status: BatchStatus = BatchStatus.STARTED
    duration_ms: float = 0.0
    counters: dict[str, dict[str, int]] = field(default_factory=dict)  # component -> counter -> n
    spout_tuples: int = 0
    reasons: dict[str, dict[str, int]] = field(default_factory=dict)  # component -> dead-letter reason -> n
    problems: ErrorDigest = field(default_factory=ErrorDigest)  # the batch's distinct errors
    logs: list[tuple[str, int, list[tuple[str, str]]]] = field(default_factory=list)  # (c, task, lines)
    windows: dict[str, dict[str, int]] = field(default_factory=dict)  # bolt -> window counters
    tasks: dict[tuple[str, int], Any] = field(default_factory=dict)  # (c, task) -> MemberStats
    watermarks: dict[str, int] = field(default_factory=dict)  # bolt -> the batch's watermark ms
    idle: list[str] = field(default_factory=list)  # members of stages that ran no task (waves.py)
    source_lags: dict[str, Any] = field(default_factory=dict)  # spout -> spouts.lag.SourceLag

    def advance(self, expected: BatchStatus, new: BatchStatus) -> None:
        """Move forward only from ``expected`` (a protocol step run out of order is a bug)."""
        if self.status is not expected:
            raise RuntimeError(f"batch {self.batch_id}: cannot go {self.status.value} -> {new.value}")
        self.status = new


@dataclass(frozen=True)
class BatchConfig:
    layout: Layout
    namespace: str
    redis_url: str
    state_key: bytes
    sink: SinkSpec
    txid_base: int
    max_attempts: int = 3
    task_hosts: int = 0  # task host slots per executor (``task/task_host.py``); 0: none
    home_key: bytes = b""  # tasks' homes on other executors (``task/homes.py``); b"": off


class BatchRunner:
    """The ``foreachBatch`` function (see module doc)."""

    def __init__(self, cfg: BatchConfig, r: Any, commit_log: Any, ticks: TickRecorder,
                 on_batch: Callable[[BatchResult], None], now_ms: Callable[[], int],
                 clock: WindowClock | None = None):
        self.cfg, self.r, self.commit_log, self.ticks = cfg, r, commit_log, ticks
        self.on_batch, self.now_ms, self.clock = on_batch, now_ms, clock
        from stormshift.state.deadletter import DeadLetters
        from stormshift.state.redrive import Redrive

        self.redrive = Redrive(r, cfg.namespace)
        self.dead_letters = DeadLetters(r, cfg.namespace)
        self.idle_windows = IdleWindows(clock.expected if clock is not None else ())
        self._built = {}

    first_started: float | None = None  # perf_counter() when the run's first batch began
    cores: int | None = None  # Spark tasks per group at most (``_cores``)
    _built: dict[tuple[str, ...], Any]  # Spark columns and frames that never change (``_rows``)
    # Global task ids sent rows in the last batch that ran (None: none yet): which groups
    # the batch's one job holds (``waves.first_job``); a guess, never a result
    _fed_last: frozenset[int] | None = None
    busy = False  # a batch is running in foreachBatch (the driver stops the query between)

    def __call__(self, df: Any, batch_id: int) -> None:
        started = time.perf_counter()
        if self.first_started is None:
            self.first_started = started
        self.busy = True
        try:
            self._batch(df, batch_id, started)
        except Exception:
            gone = outage.reporter()
            if gone.expired():  # the driver stops the query for an outage (driver/outage_watch.py):
                # a short error, not a cancelled job's whole text, which Spark's regex
                # for "interrupted by stop" overflowed the JVM's stack on
                raise outage.RedisOutage(gone.where, gone.down_for()) from None
            raise
        finally:
            self.busy = False

    def _batch(self, df: Any, batch_id: int, started: float) -> None:
        # Step 1.
        result = BatchResult(batch_id, self.cfg.txid_base + batch_id)
        if self.commit_log.committed() >= result.txid:
            result.advance(BatchStatus.STARTED, BatchStatus.SKIPPED)
            self.on_batch(result)
            return
        try:
            now = self.now_ms()  # Step 2.
            ticks = self.ticks.ticks_for(result.txid, now, batch_id)
            time_ = self.clock.plan(result.txid, batch_id, now) if self.clock else None
            redrive = self._redrive(result.txid)
            faults.hit("driver.before_stages", txid=result.txid)
            self._run_stages(df, result.txid, ticks, redrive, time_)  # Step 3.
            result.advance(BatchStatus.STARTED, BatchStatus.STAGES_DONE)
            self._gather(result, time_)  # Step 4.
            for name, n in redrive.counts.items():
                result.counters.setdefault(name, dict.fromkeys(COUNTERS, 0))["redriven"] = n
            self.commit_log.record_commit(result.txid)  # Step 5.
            result.advance(BatchStatus.STAGES_DONE, BatchStatus.COMMITTED)
            faults.hit("driver.after_commit", txid=result.txid)
            self.dead_letters.settle(result.txid)
            self.redrive.trim(result.txid)
        except BaseException:
            result.status = BatchStatus.FAILED
            raise
        finally:
            result.duration_ms = (time.perf_counter() - started) * 1000
        self.on_batch(result)

    def _redrive(self, txid: int) -> RedrivePlan:
        """Step 2: the dead letters this txid redrives (the same ones on a re-run)."""
        self.dead_letters.discard(txid)
        plan = plan_redrive(self.cfg.layout, self.redrive.claim(txid))
        plan.dead_letter_rejected(self.r, self.cfg.namespace, txid)
        return plan

    # -- step 3 ------------------------------------------------------------
    def _run_stages(self, df: Any, txid: int, ticks: frozenset[str],
                    redrive: RedrivePlan | None = None, time_: BatchTime | None = None) -> None:
        """The batch's groups in one Spark job, those left out after it one job per wave if
        their tasks got rows (``waves.py``); a task provably idle runs nothing."""
        layout = self.cfg.layout
        groups, producers = stage_groups(layout)
        spark = df.sparkSession
        final = bool(time_ is not None and time_.final)
        redriven = [{s.head: redrive.frame(spark, s.head) for s in group} if redrive else {}
                    for group in groups]

        def certain(index: int) -> bool:
            return any(stage_certain(layout, s, redriven=redriven[index].get(s.head) is not None,
                                     ticks=ticks, final=final, windows=self.idle_windows, txid=txid)
                       for s in groups[index])

        last = self._fed_last
        first = first_job(groups, producers, (
            i for i in range(len(groups)) if last is None or certain(i)
            or _fed_group(layout, groups[i], last)))
        in_first = set(first)
        readers: dict[str, list[int]] = {}
        for index, names in enumerate(producers):
            for name in names:
                readers.setdefault(name, []).append(index)

        def shared(name: str) -> bool:  # read twice, or by a later job: computed once, kept
            mine = readers.get(name, [])
            return len(mine) > 1 or any(i not in in_first for i in mine)

        frames: dict[str, Any] = {SPOUTS: df}
        persisted = []
        if shared(SPOUTS):
            df.persist()
            persisted.append(df)
        try:
            leaves = []
            for index in first:
                key = group_key(groups[index])
                out = self._group_frame(df, frames, producers[index], groups[index],
                                        redriven[index], txid, ticks, time_,
                                        self._readers_tasks(groups, readers.get(key, [])))
                if shared(key):
                    out = out.persist()
                    persisted.append(out)
                frames[key] = out
                if not any(i in in_first for i in readers.get(key, [])):
                    leaves.append(out)
            _run_job(leaves)
            self._run_rest(df, frames, persisted, [i for i in range(len(groups)) if i not in in_first],
                           groups, producers, redriven, txid, ticks, time_)
        finally:
            for frame in persisted:
                frame.unpersist()

    def _run_rest(self, df: Any, frames: dict[str, Any], persisted: list[Any], rest: list[int],
                  groups: list[list[Stage]], producers: list[list[str]],
                  redriven: list[dict[str, Any]], txid: int, ticks: frozenset[str],
                  time_: BatchTime | None) -> None:
        """The groups the first job left out, one job per wave, each stage only if an earlier
        stage sent its tasks rows this batch (``stage_runs``)."""
        if not rest:
            return
        layout = self.cfg.layout
        final = bool(time_ is not None and time_.final)
        wanted = set(rest)
        for wave in waves(groups, producers):
            mine = [i for i in wave if i in wanted]
            if not mine:
                continue
            fed = self._fed(txid)
            outs = []
            for index in mine:
                key = group_key(groups[index])
                group = [s for s in groups[index] if stage_runs(
                    layout, s, fed=fed, ticks=ticks, redriven=redriven[index].get(s.head) is not None,
                    final=final, windows=self.idle_windows, txid=txid)]
                if not group:
                    frames[key] = None
                    continue
                readers = [i for i in rest if key in producers[i]]
                out = self._group_frame(df, frames, producers[index], group, redriven[index],
                                        txid, ticks, time_, self._readers_tasks(groups, readers))
                if readers:  # read by a later wave's job
                    out = out.persist()
                    persisted.append(out)
                frames[key] = out
                outs.append(out)
            _run_job(outs)

    def _group_frame(self, df: Any, frames: dict[str, Any], reads: list[str], group: list[Stage],
                     redriven: dict[str, Any], txid: int, ticks: frozenset[str],
                     time_: BatchTime | None, beacons: tuple[int, ...] = ()) -> Any:
        """The output rows of ``group``'s stages run over their input (lazily), with the
        ``beacons`` of the tasks reading it."""
        final = bool(time_ is not None and time_.final)
        rows = self._rows(df, frames, reads, group, redriven)
        jobs = {stage.head: dataclasses.replace(self._job(stage, txid, ticks, time_, idle_tasks(
            self.cfg.layout, stage, ticks=ticks, redriven=redriven.get(stage.head) is not None,
            final=final, windows=self.idle_windows, txid=txid)), beacons=beacons if n == 0 else ())
            for n, stage in enumerate(group)}
        return rows.mapInArrow(_stage_fn(txid, jobs), R.SCHEMA_DDL)

    def _readers_tasks(self, groups: list[list[Stage]], readers: list[int]) -> tuple[int, ...]:
        """Global task ids of the stages of the groups ``readers``."""
        layout = self.cfg.layout
        return tuple(sorted({layout.first_task(s.head) + i for g in readers for s in groups[g]
                             for i in range(s.par)}))

    def _rows(self, df: Any, frames: dict[str, Any], reads: list[str], group: list[Stage],
              redriven: dict[str, Any]) -> Any:
        """The rows of ``group``'s tasks, its Storm tasks dealt to at most ``_cores`` Spark
        tasks (module doc, step 3)."""
        layout = self.cfg.layout
        spark = df.sparkSession
        extra = [f for f in (redriven.get(s.head) for s in group) if f is not None]
        if group[0].head in layout.direct_heads and not extra:
            # The source's partition i is this head's task i, beacon included (layout doc).
            return df.where(self._positions(group)[0])
        # also a direct head's batch with redriven rows: they need the shuffle
        parts = [frames[p] for p in reads if frames.get(p) is not None]
        if not any(p != SPOUTS for p in reads if frames.get(p) is not None):
            parts.append(self._beacons(spark, group))  # no stage sends them
        wanted, position, tasks = self._positions(group)
        rows = reduce(lambda a, b: a.unionAll(b), parts + extra).where(wanted)
        spark_tasks = min(tasks, self._cores(spark))
        if spark_tasks < tasks:  # several Storm tasks per Spark task (stage.run_partition)
            position = position % spark_tasks
        return rows.repartitionById(spark_tasks, position)

    def _positions(self, group: list[Stage]) -> tuple[Any, Any, int]:
        """``_task_positions`` of ``group``, built once per run (Spark columns cost a driver
        round trip each)."""
        key = tuple(s.head for s in group)
        if key not in self._built:
            self._built[key] = _task_positions(self.cfg.layout, group)
        return self._built[key]  # type: ignore[no-any-return]

    def _beacons(self, spark: Any, group: list[Stage]) -> Any:
        """The beacons of ``group``'s tasks in one Spark partition, built once per run."""
        key = ("beacons", str(id(spark)), *(s.head for s in group))  # a frame is a session's
        if key not in self._built:
            layout = self.cfg.layout
            firsts = [layout.first_task(s.head) for s in group]
            lo, hi = min(firsts), max(f + s.par for f, s in zip(firsts, group))
            self._built[key] = _beacons(spark, lo, hi - lo)
        return self._built[key]

    def _cores(self, spark: Any) -> int:
        """Spark tasks a group's Storm tasks are dealt to: the executors' cores (each Storm
        task keeps its own transaction and fence; fewer, fuller Spark tasks cost less)."""
        if self.cores is None:
            self.cores = max(1, int(spark.sparkContext.defaultParallelism))
        return self.cores

    def _fed(self, txid: int) -> frozenset[int]:
        """Global task ids the stages run so far this batch sent rows (their records)."""
        return frozenset(t for _, stats in read_stats(self.r, self.cfg.namespace, txid)
                         for t in stats.sent)

    def _job(self, stage: Stage, txid: int, ticks: frozenset[str],
             time_: BatchTime | None = None, idle_ok: frozenset[int] = frozenset()) -> StageJob:
        c = self.cfg
        return StageJob(c.layout, stage, txid, frozenset(t for t in ticks if t in stage.members),
                        c.redis_url, c.namespace, c.state_key, c.sink, c.max_attempts, time_,
                        c.task_hosts, c.home_key, idle_ok)

    # -- step 4 ------------------------------------------------------------
    def _gather(self, result: BatchResult, time_: BatchTime | None = None) -> None:
        layout = self.cfg.layout
        spout_seq: dict[int, int] = {}
        reports: dict[str, list[dict[str, Any]]] = {}
        fed: set[int] = set()
        for name, stats in read_stats(self.r, self.cfg.namespace, result.txid):
            fed.update(stats.sent)
            if stats.windows is not None:
                reports.setdefault(name, []).append(stats.windows)
                self.idle_windows.note(name, stats.task, result.txid, stats.windows)
            counters = result.counters.setdefault(name, dict.fromkeys(COUNTERS, 0))
            for column in COUNTERS:
                counters[column] += getattr(stats, column)
            result.tasks[(name, stats.task)] = stats
            counters["tasks"] = counters.get("tasks", 0) + 1  # task records: tasks run
            for src, top in stats.maxseq.items():
                spout_seq[src] = max(spout_seq.get(src, -1), top)
            if stats.reasons:
                reasons = result.reasons.setdefault(name, {})
                for reason, n in stats.reasons.items():
                    reasons[reason] = reasons.get(reason, 0) + n
            for (kind, _, location), (n, trace, message) in stats.problems.items():
                result.problems.add(name, kind, message, location, trace, n)
            if stats.logs:
                result.logs.append((name, stats.task, stats.logs))
        for src, top in spout_seq.items():
            owner, task = layout.task_owner[src]
            if layout.graph.component(owner).is_spout:
                counters = result.counters.setdefault(owner, dict.fromkeys(COUNTERS, 0))
                counters["tuples_out"] += top + 1
                result.spout_tuples += top + 1
                result.tasks.setdefault((owner, task), MemberStats(task=task)).tuples_out += top + 1
        self._fed_last = frozenset(fed)
        # a stage none of whose tasks ran (``waves.py``): idle this batch
        ran = {name for name, _ in result.tasks}
        result.idle = [m for stage in layout.stages for m in stage.members if m not in ran]
        if self.clock is not None:
            result.windows = self.clock.fold(result.txid, time_, reports)
        if time_ is not None:
            result.watermarks = dict(time_.watermarks)
        result.source_lags = source_lags(self.r, self.cfg.namespace)
        batchstats.drop(self.r, self.cfg.namespace, result.txid)


def _fed_group(layout: Layout, group: list[Stage], fed: frozenset[int]) -> bool:
    """Whether any task of ``group``'s stages is in ``fed``."""
    for stage in group:
        first = layout.first_task(stage.head)
        if any(first + i in fed for i in range(stage.par)):
            return True
    return False


def _run_job(frames: list[Any]) -> None:
    """One Spark job computing ``frames`` (their rows are already where they go)."""
    if frames:
        reduce(lambda a, b: a.unionAll(b), frames).write.format("noop").mode("overwrite").save()


def source_lags(r: Any, namespace: str) -> dict[str, Any]:
    """Each replayable source's lag as its planner last reported it (behind the offsets it
    planned last: this batch's end, or the next batch's when Spark planned that already)."""
    import json

    from stormshift.engines.spark.records.runrecords import read_source_lags
    from stormshift.spouts.lag import SourceLag

    return {spout: SourceLag.from_dict(json.loads(raw))
            for spout, raw in read_source_lags(r, namespace).items()}


def _task_positions(layout: Layout, group: list[Stage]) -> tuple[Any, Any, int]:
    """``(rows of the group's tasks, partition of a row, partitions)``: the group's stages'
    tasks numbered one after the other, in group order."""
    from pyspark.sql import functions as F

    dest = F.col("dest")
    wanted: Any = None
    position: Any = None
    offset = 0
    for stage in group:
        first = layout.first_task(stage.head)
        mine = (dest >= first) & (dest < first + stage.par)
        at = dest - F.lit(first - offset)
        wanted = mine if wanted is None else wanted | mine
        position = F.when(mine, at) if position is None else position.when(mine, at)
        offset += stage.par
    return wanted, position.cast("int"), offset


def _beacons(spark: Any, first: int, n: int) -> Any:
    """One ``BEACON`` per task ``first .. first + n - 1`` (``rows.Kind``), in one partition
    (the group's ``where`` keeps its own): every task runs (ticks, snapshots) and learns its
    task id from its rows -- Spark partition ids are renumbered by unions."""
    from pyspark.sql import functions as F

    dest = (F.col("id") + F.lit(first)).cast(R.SPARK_TYPES[0][1]).alias("dest")
    rest = [F.lit(value).cast(ddl).alias(name)
            for (name, ddl), value in zip(R.SPARK_TYPES[1:], R.beacon_row(first)[1:])]
    return spark.range(0, n, 1, 1).select(dest, *rest)


def _stage_fn(txid: int, jobs: dict[str, StageJob]) -> Callable[[Any], Any]:
    """The ``mapInArrow`` function of a group: the jobs go pickled once, here, so that a
    worker hands the same bytes to its task host (``task/task_host.py``) unchanged."""
    import hashlib

    from pyspark import cloudpickle

    payload = cloudpickle.dumps(jobs)
    digest = hashlib.blake2b(payload, digest_size=16).hexdigest()

    def fn(batches: Any) -> Any:
        from stormshift.engines.spark.task.task_host import jobs_of, run_on_host

        seen: dict[str, str] = {}  # run_partition names the stage of the task it found

        def hosted(*args: Any) -> Any:
            return run_on_host(payload, digest, *args)

        return profiled(lambda: f"stage-{txid}-{seen.get('head', '+'.join(jobs))}",
                        run_partition(jobs_of(digest, payload), batches, seen, hosted))

    return fn
