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
   nothing (``stages.py``, ``waves.py``): STAGES_DONE;
4. gather the tasks' counters (Redis) for progress and summary, and fold the
   windowed bolts' reports into the watermark trackers (``windows.py``);
5. record ``committed = txid`` in Redis: COMMITTED; only then return, so Spark
   writes its own commit log after ours. The txid's dead letters are final and its
   redrive claim is trimmed.

A failure in 3-5 leaves the batch FAILED and raises: Spark stops the query,
and a restart re-runs the batch id with the same input (its offset log).
"""

from __future__ import annotations

import enum
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from stormshift.engines.problems import ErrorDigest
from stormshift.engines.spark.diagnostics import faults
from stormshift.engines.spark.driver.redrive import RedrivePlan, plan_redrive
from stormshift.engines.spark.driver.stages import BatchConfig, BatchStages
from stormshift.engines.spark.driver.ticks import TickRecorder
from stormshift.engines.spark.driver.waves import (
    SPOUTS,
    IdleWindows,
    stage_groups,
)
from stormshift.engines.spark.driver.windows import WindowClock
from stormshift.engines.spark.records import batchstats
from stormshift.engines.spark.task.counters import COUNTERS, MemberStats, read_stats
from stormshift.engines.spark.task.windowing import BatchTime
from stormshift.state import outage

__all__ = ["COUNTERS", "SPOUTS", "BatchConfig", "BatchResult", "BatchRunner", "BatchStatus",
           "stage_groups"]


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
        self.stages = BatchStages(cfg, r, self.idle_windows)

    first_started: float | None = None  # perf_counter() when the run's first batch began
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
        """Step 3 (``stages.py``)."""
        self.stages.run(df, txid, ticks, redrive, time_)

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
        self.stages.fed_last = frozenset(fed)
        # a stage none of whose tasks ran (``waves.py``): idle this batch
        ran = {name for name, _ in result.tasks}
        result.idle = [m for stage in layout.stages for m in stage.members if m not in ran]
        if self.clock is not None:
            result.windows = self.clock.fold(result.txid, time_, reports)
        if time_ is not None:
            result.watermarks = dict(time_.watermarks)
        result.source_lags = source_lags(self.r, self.cfg.namespace)
        batchstats.drop(self.r, self.cfg.namespace, result.txid)


def source_lags(r: Any, namespace: str) -> dict[str, Any]:
    """Each replayable source's lag as its planner last reported it (behind the offsets it
    planned last: this batch's end, or the next batch's when Spark planned that already)."""
    import json

    from stormshift.engines.spark.records.runrecords import read_source_lags
    from stormshift.spouts.lag import SourceLag

    return {spout: SourceLag.from_dict(json.loads(raw))
            for spout, raw in read_source_lags(r, namespace).items()}
