"""An executor-side spout's planning: number the chunks, count them once read, ack them.

Opt in with ``stormshift.spout.executor: true`` (topology config, or the spout's own
config). The planner process hosts no spout instance and pumps no tuple: each
batch plans, per spout task, the number of the chunk its read logs and that
chunk's limit; the spout runs in the read (``../read/chunk_read.py``). The next
``latestOffset`` reads the heads of the chunks the last batch logged
(``engines/spark/records/chunks.py``): their counts feed ``--max-tuples`` (``n``) and their
"ended" flags end of input, so both stay exact; a chunk's count is known one batch
after it ran, so a run's end comes one (empty) batch later than on the planner path.

Offsets (JSON, besides ``n`` / ``done`` / ``fin`` / ``k`` / ``capped``, ``source.py``):
``x`` the next chunk number per task; ``s`` the seq after the counted chunks;
``w`` whether chunk ``x - 1`` is planned and not yet counted (this batch reads it);
``lim`` its limit; ``e`` the task's input ended. ``commit(end)`` sets each task's ack
mark to ``x``: the instance acks those chunks' msg ids before its next read.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from stormshift.engines.spark.source.options import ChunkPartition, Opts
from stormshift.engines.spark.source.planner.offsets import (
    after_done,
    counts_of,
    limits,
    next_offset,
    over_budget,
    resume,
)
from stormshift.errors import StateError
from stormshift.topology.graph import TopologyGraph

__all__ = ["EXECUTOR_KEY", "ChunkPlanner", "executor_mode", "initial_chunks", "plan_chunks"]

EXECUTOR_KEY = "stormshift.spout.executor"


def executor_mode(graph: TopologyGraph, spout: str) -> bool:
    """Whether ``spout`` runs on executors: its own config, else the topology's (default no)."""
    comp = graph.component(spout)
    value = comp.config.get(EXECUTOR_KEY, graph.config.get(EXECUTOR_KEY, False))
    return value is True or str(value).lower() in ("true", "1", "yes")


def initial_chunks(heads: Sequence[Any], acked: Sequence[int]) -> dict:
    """A query's first offset: each task from its ack mark (chunks logged but not in a
    committed batch are planned again, and re-read), ``heads[i]`` = head of chunk mark - 1."""
    par = len(acked)
    return {"x": list(acked), "s": [h.end if h else 0 for h in heads],
            "w": [False] * par, "e": [bool(h and h.ended) for h in heads], "lim": [0] * par,
            "n": [0] * par, "done": False, "fin": False, "k": 0, "capped": False}


def plan_chunks(opts: Opts, start: dict, heads: Sequence[Any], idle: Sequence[bool]) -> dict:
    """The next offset (pure): count the chunks ``start`` planned (``heads[i]``: head of
    chunk ``x[i] - 1`` where ``w[i]``), then plan one chunk per open task with room."""
    par = len(start["x"])
    x, s, w, e = list(start["x"]), list(start["s"]), list(start["w"]), list(start["e"])
    counts = counts_of(start, par)
    for i in range(par):
        if w[i]:
            h = heads[i]
            if h is None:
                raise StateError(f"spout {opts.spout!r} task {i}: chunk {x[i] - 1} was planned and "
                                 "its batch ran, but it is not logged (its chunk log was deleted?)")
            counts[i] += h.tuples
            s[i], e[i], w[i] = h.end, e[i] or h.ended, False
        e[i] = e[i] or bool(idle[i])
    capped = over_budget(opts, counts)
    lim = [0] * par
    if not capped:
        for i, room in enumerate(limits(opts, counts, e)):
            if not e[i] and room > 0:
                x[i], w[i], lim[i] = x[i] + 1, True, room
    done = capped or (all(e) and not any(w))
    out = next_offset(opts, start, "x", x, done, not any(w), counts, capped)
    out.update(s=s, w=w, e=e, lim=lim)
    return out


class ChunkPlanner:
    """The planner of an executor-side spout (module doc)."""

    def __init__(self, opts: Opts):
        from stormshift.engines.spark.records.chunks import ChunkLog
        from stormshift.engines.spark.runtime.worker import redis_for
        from stormshift.engines.spark.source.spout_report import SpoutReport

        self.opts = opts
        r = redis_for(opts.redis_url)
        par = opts.graph.component(opts.spout).par
        self.logs = [ChunkLog(r, opts.namespace, opts.spout, i) for i in range(par)]
        self.trimmed = [log.acked() for log in self.logs]
        self.last_new = [time.monotonic()] * par  # planning time a task last logged tuples
        self.last_full = [-1] * par  # per task, the last chunk known to hold tuples
        self.planned_x = list(self.trimmed)  # per task, ``x`` of the last offset planned
        self.acks_read = [-1] * par  # per task, the chunk whose read gives it its last acks
        self.report = SpoutReport(r, opts.namespace, opts.spout, opts.graph.config)

    def initial_offset(self) -> dict:
        heads = [log.head(mark - 1) for log, mark in zip(self.logs, self.trimmed)]
        return initial_chunks(heads, self.trimmed)

    def latest_offset(self, start: dict) -> dict:
        start = resume(self.opts, start)
        if start.get("done"):
            return after_done(self.opts, start)
        heads = [log.head(n - 1) if pending else None
                 for log, n, pending in zip(self.logs, start["x"], start["w"])]
        end = plan_chunks(self.opts, start, heads, self._idle(heads, start))
        self.planned_x = list(end["x"])
        return end

    def _idle(self, heads: Sequence[Any], start: dict) -> list[bool]:
        """``--until-done``: a task whose chunks held nothing for ``idle_ms`` is taken as
        ended (``WalPlanner._check_idle``); decided here, kept by Spark's offset log. The
        clock runs only once every chunk with tuples is acked and a chunk read after those
        acks reached the instance (at its first read after ``commit``) is counted."""
        now, out = time.monotonic(), []
        for i, h in enumerate(heads):
            if self.opts.idle_ms <= 0 or start["e"][i] or h is None or h.ended:
                out.append(False)
                continue
            if h.tuples:
                self.last_full[i] = start["x"][i] - 1
            in_flight = self.trimmed[i] <= self.last_full[i] or start["x"][i] - 1 < self.acks_read[i]
            if h.tuples or in_flight:
                self.last_new[i] = now  # new tuples, or tuples in flight (not idle, module doc)
            idle = (now - self.last_new[i]) * 1000 >= self.opts.idle_ms
            if idle:
                self.report.warning(
                    f"spout {self.opts.spout} task {i} emitted nothing new for "
                    f"{self.opts.idle_ms / 1000:g}s and never signalled end of input: taken as done. "
                    "Fix: raise StopIteration from next_tuple when the input is used up; or set -o "
                    "stormshift.idle_timeout_secs=N for a slower source.")
            out.append(idle)
        return out

    def partitions(self, start: dict, end: dict) -> list[ChunkPartition]:
        # Every task, even one with no chunk (see WalPlanner.partitions).
        return [ChunkPartition(i, end["x"][i] - 1 if end["w"][i] else -1, end["lim"][i])
                for i in range(len(end["x"]))]

    def commit(self, end: dict) -> None:
        """Chunks below ``x`` are in committed batches: the ack mark, then their payloads go."""
        for i, (log, mark) in enumerate(zip(self.logs, end["x"])):
            if mark > self.trimmed[i]:
                log.ack_through(mark, self.trimmed[i])
                if mark > self.last_full[i] >= self.trimmed[i]:
                    # Spark commits batch N while planning N + 1: the chunk planned last is
                    # read after this, and its read gives the instance these acks
                    self.acks_read[i] = self.planned_x[i] - 1
                self.trimmed[i] = mark

    def close(self) -> None:
        return None
