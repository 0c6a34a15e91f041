"""Step 3 of a batch (``batch.py``): the batch's stages as one Spark job.

Every group of stages expected to have work (``waves.first_job``) is built
into one DAG: its rows (the upstream frames, redriven rows; beacons sent by
the upstream stage's task 0, else one one-partition frame) -> ``where`` ->
``repartitionById`` onto at most as many Spark tasks as the executors have
cores -> one ``mapInArrow`` (``task/stage.run_partition`` runs each Storm task
it holds with its own transaction). An output read twice, or by a later job,
is persisted: no stage runs twice on one tuple. One action computes the
outputs nothing in the job reads. The groups left out run after it, one job
per wave, only where the tasks' records show rows for them. The Spark columns
and frames that never change are built once per run: each costs the driver
round trips over py4j.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import reduce
from typing import Any

from stormshift.engines.spark.diagnostics.profiling import profiled
from stormshift.engines.spark.driver.redrive import RedrivePlan
from stormshift.engines.spark.driver.waves import (
    SPOUTS,
    IdleWindows,
    first_job,
    group_key,
    idle_tasks,
    stage_certain,
    stage_groups,
    stage_runs,
    stage_tasks,
    waves,
)
from stormshift.engines.spark.protocol import rows as R
from stormshift.engines.spark.protocol.layout import Layout, Stage
from stormshift.engines.spark.task.counters import read_stats
from stormshift.engines.spark.task.sink import SinkSpec
from stormshift.engines.spark.task.stage import StageJob, run_partition
from stormshift.engines.spark.task.windowing import BatchTime
from stormshift.state.client import Redis

__all__ = ["BatchConfig", "BatchStages"]


@dataclass(frozen=True)
class BatchConfig:
    """What every batch of a run shares (the engine builds it once)."""

    layout: Layout
    namespace: str
    redis_url: str
    state_key: bytes
    sink: SinkSpec
    txid_base: int
    max_attempts: int = 3
    task_hosts: int = 0  # task host slots per executor (``task/task_host.py``); 0: none
    home_key: bytes = b""  # tasks' homes on other executors (``task/homes.py``); b"": off


class BatchStages:
    """Runs step 3 of each batch of a run (module doc)."""

    def __init__(self, cfg: BatchConfig, r: Redis, idle_windows: IdleWindows):
        self.cfg, self.r, self.idle_windows = cfg, r, idle_windows
        self._built: dict[tuple[str, ...], Any] = {}
        # the plan's shape never changes in a run: groups, the frames each reads, their readers
        self.groups, self.producers = stage_groups(cfg.layout)
        self.readers: dict[str, list[int]] = {}
        for index, names in enumerate(self.producers):
            for name in names:
                self.readers.setdefault(name, []).append(index)

    cores: int | None = None  # Spark tasks per group at most (``_cores``)
    # Global task ids sent rows in the last batch that ran (None: none yet): which groups
    # the batch's one job holds (``waves.first_job``); a guess, never a result
    fed_last: frozenset[int] | None = None

    def run(self, df: Any, txid: int, ticks: frozenset[str],
            redrive: RedrivePlan | None = None, time_: BatchTime | None = None) -> None:
        """The batch's groups in one Spark job, those left out after it one job per wave if
        their tasks got rows (``waves.py``); a task provably idle runs nothing."""
        layout = self.cfg.layout
        groups, producers, readers = self.groups, self.producers, self.readers
        spark = df.sparkSession
        final = bool(time_ is not None and time_.final)
        redriven = [{s.head: redrive.frame(spark, s.head) for s in group} if redrive else {}
                    for group in groups]

        def certain(index: int) -> bool:
            return any(stage_certain(layout, s, redriven=redriven[index].get(s.head) is not None,
                                     ticks=ticks, final=final, windows=self.idle_windows, txid=txid)
                       for s in groups[index])

        last = self.fed_last
        first = first_job(groups, producers, (
            i for i in range(len(groups)) if last is None or certain(i)
            or _fed_group(layout, groups[i], last)))
        in_first = set(first)

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
                later = [i for i in self.readers.get(key, []) if i in wanted]
                out = self._group_frame(df, frames, producers[index], group, redriven[index],
                                        txid, ticks, time_, self._readers_tasks(groups, later))
                if later:  # read by a later wave's job
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
        jobs = {stage.head: self._job(stage, txid, ticks, time_, idle_tasks(
            self.cfg.layout, stage, ticks=ticks, redriven=redriven.get(stage.head) is not None,
            final=final, windows=self.idle_windows, txid=txid), beacons if n == 0 else ())
            for n, stage in enumerate(group)}
        return rows.mapInArrow(_stage_fn(txid, jobs), R.SCHEMA_DDL)

    def _readers_tasks(self, groups: list[list[Stage]], readers: list[int]) -> tuple[int, ...]:
        """Global task ids of the stages of the groups ``readers``."""
        return tuple(sorted({t for g in readers for s in groups[g]
                             for t in stage_tasks(self.cfg.layout, s)}))

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

    def _job(self, stage: Stage, txid: int, ticks: frozenset[str], time_: BatchTime | None,
             idle_ok: frozenset[int], beacons: tuple[int, ...]) -> StageJob:
        c = self.cfg
        return StageJob(c.layout, stage, txid, frozenset(t for t in ticks if t in stage.members),
                        c.redis_url, c.namespace, c.state_key, c.sink, c.max_attempts, time_,
                        c.task_hosts, c.home_key, idle_ok, beacons)


def _fed_group(layout: Layout, group: list[Stage], fed: frozenset[int]) -> bool:
    """Whether any task of ``group``'s stages is in ``fed``."""
    return any(t in fed for stage in group for t in stage_tasks(layout, stage))


def _run_job(frames: list[Any]) -> None:
    """One Spark job computing ``frames`` (their rows are already where they go)."""
    if frames:
        reduce(lambda a, b: a.unionAll(b), frames).write.format("noop").mode("overwrite").save()


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
