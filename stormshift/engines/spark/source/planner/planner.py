"""The planning side of a spout source: runs in Spark's long-lived planner process.

``make_planner`` picks one per source: ``WalPlanner`` (``wal_planner.py``) hosts a
generic spout's tasks and logs their emits before an offset leaves this process;
``ReplayPlanner`` asks a replayable spout for its offsets; ``ChunkPlanner``
(``chunk_planner.py``) numbers the chunks an executor-side spout logs in its reads. Both speak the offset
format described in ``source`` (built by ``offsets.py``).
"""

from __future__ import annotations

from typing import Any, Protocol

from stormshift.engines.spark.source.options import Opts, ReplayPartition
from stormshift.engines.spark.source.planner.chunk_planner import ChunkPlanner, executor_mode
from stormshift.engines.spark.source.planner.offsets import (
    after_done,
    counts_of,
    limits,
    next_offset,
    over_budget,
    resume,
)
from stormshift.engines.spark.source.planner.wal_planner import WalPlanner

__all__ = ["ChunkPlanner", "Planner", "ReplayPlanner", "WalPlanner", "make_planner"]


class Planner(Protocol):
    """What the source (``source.SpoutReader``) asks of a planner, Spark's
    ``DataSourceStreamReader`` calls one for one: the three planners share it."""

    def initial_offset(self) -> dict: ...

    def latest_offset(self, start: dict) -> dict: ...

    def partitions(self, start: dict, end: dict) -> list[Any]: ...

    def commit(self, end: dict) -> None: ...

    def close(self) -> None: ...


def make_planner(opts: Opts) -> Planner:
    from stormshift.engines.spark.runtime.worker import ensure_paths

    ensure_paths(opts.graph)
    if opts.graph.component(opts.spout).capabilities.replayable:
        return ReplayPlanner(opts)
    if executor_mode(opts.graph, opts.spout):
        return ChunkPlanner(opts)
    return WalPlanner(opts)


class ReplayPlanner:
    """A replayable spout read through ``replay_*`` offsets (no log)."""

    def __init__(self, opts: Opts):
        from stormshift.adapters.host import SpoutHost

        self.opts = opts
        self.comp = opts.graph.component(opts.spout)
        self.host = SpoutHost(opts.graph, opts.spout, 0)
        self.host.open()
        self.spout = self.host.instance

    def initial_offset(self) -> dict:
        """Where the query starts: resolved once per checkpoint (``engines/spark/records/starts.py``), so a
        driver restarted before batch 0 committed re-plans batch 0 from the same offsets."""
        from stormshift.spouts.base import initial_offsets

        def starts() -> dict:
            return initial_offsets(self.spout)

        if self.opts.checkpoint_id:
            from stormshift.engines.spark.records.starts import query_start
            from stormshift.engines.spark.runtime.worker import redis_for

            offsets = query_start(redis_for(self.opts.redis_url), self.opts.namespace,
                                  self.opts.checkpoint_id, self.opts.spout, starts)
        else:
            offsets = starts()
        return {"p": offsets, "n": [0] * self.comp.par, "done": False,
                "fin": False, "k": 0, "capped": False}

    def latest_offset(self, start: dict) -> dict:
        """Each task's next records, up to ``batch_max`` and its ``--max-tuples`` target: the
        cut is in the offsets, so Spark's offset log replays exactly it."""
        start = resume(self.opts, start)
        if start.get("done"):
            return after_done(self.opts, start)
        begin = dict(start["p"])
        par = self.comp.par
        counts = counts_of(start, par)
        ended = [False] * par
        if self.opts.max_total >= 0:
            ended = [self.spout.replay_task_ended(begin, i) for i in range(par)]
        end, took = self.spout.replay_plan(begin, limits(self.opts, counts, ended))
        self.report_lag(end)
        counts = [c + n for c, n in zip(counts, took)]
        capped = over_budget(self.opts, counts)
        done = capped or bool(self.spout.replay_exhausted(end))
        return next_offset(self.opts, start, "p", end, done, end == begin, counts, capped)

    def report_lag(self, end: dict) -> None:
        """The source's lag behind the offsets just planned (``spouts/lag.py``), for the
        driver to take with its next batch: a report beside the state, never part of it."""
        import json

        from stormshift.engines.spark.records.runrecords import write_source_lag
        from stormshift.engines.spark.runtime.worker import redis_for

        try:
            lag = self.spout.replay_lag(end)
        except NotImplementedError:  # a user's replayable spout without replay_partition_lag
            return
        if lag is not None:  # None: the source could not tell now (a broker down)
            write_source_lag(redis_for(self.opts.redis_url), self.opts.namespace,
                             self.opts.spout, json.dumps(lag.to_dict()))

    def partitions(self, start: dict, end: dict) -> list[ReplayPartition]:
        from stormshift.spouts.base import initial_offset, partitions_of_task

        names = list(end["p"])
        parts = []
        for task in range(self.comp.par):
            ranges = [
                (p, start["p"].get(p, initial_offset(self.spout, p)), end["p"][p])
                for p in partitions_of_task(names, task, self.comp.par)
            ]
            # Every task, even one with nothing new (see WalPlanner.partitions).
            parts.append(ReplayPartition(task, [r for r in ranges if r[1] != r[2]]))
        return parts

    def commit(self, end: dict) -> None:
        """Offsets are the spout's acks (Spark's offset log holds them); a spout that keeps
        them elsewhere too (KafkaSpout: a consumer group, for lag monitoring, never the
        source of truth) is told once the batch ending at ``end`` committed."""
        if self.comp.capabilities.has("replay_commit") and end.get("p") is not None:
            self.spout.replay_commit(end["p"])

    def close(self) -> None:
        return None
