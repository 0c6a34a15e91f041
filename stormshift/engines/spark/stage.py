"""One stage of one batch in one Spark task: host the bolts of a stage for task *i*.

Runs inside ``mapInArrow`` (a Python worker). Partition *i* is task index *i*
of every member of the stage (``repartitionById`` put it there). Per batch:

1. sort the partition's rows by ``(src, seq)`` (shuffle order is not
   deterministic; Storm's per-source order is kept, interleaving fixed);
2. for each member in order: take an epoch, get the instance holding the
   state of txid-1 (``taskstate``), run its tuples inside a ``TaskScope``
   (maps flush fenced at the end), deliver the batch's tick if it was
   planned, snapshot its state at txid;
3. emits go to fused members in process (task *i* -> task *i*), to other
   stages as rows, and leaf emits to the sink;
4. write the task's counters for the driver's progress line and summary.

Retry policy: a tuple whose ``process()`` raises is retried in the task up to
``max_attempts`` times in all (emits of a failed attempt are discarded), then
dead-lettered with its error and traceback; the batch goes on without it. A
tuple of the wrong arity or whose emit cannot be encoded is dead-lettered at
once (retrying cannot change it), and so is a tuple the bolt ``fail()``s
itself (Storm would replay it from the spout; a batch engine has no replay).
"""

from __future__ import annotations

import sys
import traceback as tb
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import msgpack
import pyarrow as pa

from stormshift.engines.spark import rows as R
from stormshift.engines.spark.layout import Layout, Stage
from stormshift.engines.spark.sink import SinkSpec, write_leaf
from stormshift.engines.spark.taskstate import TaskCache, dump_state, open_task
from stormshift.errors import ComponentFailure, TupleError

__all__ = ["StageJob", "run_partition", "stats_key"]

_CACHE = TaskCache()
_REDIS: dict[str, Any] = {}


@dataclass(frozen=True)
class StageJob:
    """Everything the tasks of one stage need for one batch (pickled to executors)."""

    layout: Layout
    stage: Stage
    txid: int
    ticks: frozenset[str]
    redis_url: str
    namespace: str
    state_key: bytes
    sink: SinkSpec
    max_attempts: int = 3


def stats_key(namespace: str, txid: int) -> str:
    from stormshift.state import keys as K

    return K.ns_key(namespace, f"spark:stats:{txid}")


def redis_for(url: str) -> Any:
    client = _REDIS.get(url)
    if client is None:
        from stormshift.state.connection import connect

        client = _REDIS[url] = connect(url)
    return client


def ensure_paths(graph: Any) -> None:
    for d in reversed(graph.source_dirs):
        if d not in sys.path:
            sys.path.insert(0, d)


@dataclass
class MemberStats:
    tuples_in: int = 0
    tuples_out: int = 0
    acks: int = 0
    fails: int = 0
    errors: int = 0
    dead_lettered: int = 0
    leaf: int = 0
    reused: int = 0
    maxseq: dict[int, int] = field(default_factory=dict)


class _Member:
    """One hosted bolt task of the stage, with its output routing."""

    def __init__(self, job: StageJob, name: str, task: int, r: Any, out: R.RowBuilder,
                 queues: dict[str, list[tuple[int, int, list[Any]]]]):
        self.job, self.name, self.task, self.r, self.out, self.queues = job, name, task, r, out, queues
        layout = job.layout
        self.comp = layout.graph.component(name)
        self.task_id = self.comp.task_id(task)
        self.stats = MemberStats()
        self.leaves: list[tuple[str, list[Any]]] = []
        self.first_task = {c.name: c.first_task_id for c in layout.graph}
        self.codes = {s: layout.stream_code[(name, s)] for s in self.comp.outputs}
        self.leaf_streams = {s for (c, s) in layout.leaf_streams if c == name}
        self.fused = frozenset(queues)
        self.keep_leaves = job.sink.kind != "drop"  # a drop sink only counts them
        self.packer = msgpack.Packer(use_bin_type=True)
        self.plans: dict[Any, tuple[tuple[int, ...], tuple[str, ...]]] = {}
        self.host: Any = None

    # -- lifecycle -------------------------------------------------------
    def open(self) -> None:
        from stormshift.adapters.host import host_component
        from stormshift.state.fencing import acquire_epoch
        from stormshift.state.snapshots import SnapshotStore

        job = self.job
        self.epoch = acquire_epoch(self.r, job.namespace, self.name, self.task)
        self.store = SnapshotStore(self.r, job.namespace, job.state_key)
        key = (job.namespace, self.name, self.task)
        self.host, reused = open_task(
            key, job.txid, self.epoch, _CACHE,
            lambda: host_component(job.layout.graph, self.name, self.task),
            lambda: self.store.load(self.name, self.task, job.txid),
        )
        self.stats.reused = int(reused)
        self.host.router.reset_seq()

    def close(self) -> None:
        job = self.job
        # Step 4 of taskstate: snapshot at txid (fenced), then keep the live instance.
        self.store.save(self.name, self.task, job.txid, self.epoch, dump_state(self.host.instance))
        _CACHE.put((job.namespace, self.name, self.task), self.host, job.txid, self.epoch)
        marker = stats_key(job.namespace, job.txid) + f":sink:{self.name}:{self.task}"
        write_leaf(job.sink, self.r, marker, self.name, self.task, job.txid, self.leaves)

    # -- processing ------------------------------------------------------
    def run_tuples(self, items: Iterator[tuple[int, int, Any]]) -> None:
        """Execute ``(src task id, stream code or -1, values)`` items in order.

        The first attempt of each tuple is inlined here (the per-tuple path);
        ``_execute`` runs the retries after a ``ComponentFailure``.
        """
        layout, host, stats = self.job.layout, self.host, self.stats
        outbox = host.outbox
        emits, fails = outbox.emits, outbox.fails
        execute, dispatch = host.execute, self._dispatch
        makers: dict[tuple[int, int], Any] = {}
        prefix = f"{self.job.txid}:{self.task}:"
        n = 0
        last: tuple[int, int] | None = None
        mk: Any = None
        for src, sid, values in items:
            if last is None or src != last[0] or sid != last[1]:  # rows come grouped by src
                last = (src, sid)
                mk = makers.get(last)
                if mk is None:
                    mk = makers[last] = self._maker(src, sid)
            n += 1
            try:
                tup = mk(values, prefix + str(n), src)
            except TupleError as exc:
                self._dead_letter(layout.streams[sid][1] if sid >= 0 else "default", values, exc, "")
                continue
            before = len(fails)
            try:
                execute(tup)
            except ComponentFailure as exc:
                emits.clear()
                self._execute(tup, outbox, exc, self.job.max_attempts - 1)
                continue
            if len(fails) > before and tup.id in fails[before:]:
                self._bolt_failed(tup)
            if emits:
                try:
                    dispatch(emits)
                except (TypeError, ValueError, OverflowError) as exc:
                    emits.clear()
                    self._dead_letter(tup.stream, list(tup.values), _encode_error(self.name, exc), "")
                    continue
                emits.clear()
        stats.tuples_in += n

    def _maker(self, src: int, sid: int) -> Any:
        owner, _ = self.job.layout.task_owner[src]
        stream = self.job.layout.streams[sid][1]
        return self.host.tuple_factory.maker(owner, stream)

    def _bolt_failed(self, tup: Any) -> None:
        # The bolt failed the tuple itself: Storm would replay it from the spout
        # (forever, if the failure is deterministic); here it is dead-lettered once.
        self._dead_letter(tup.stream, list(tup.values),
                          TupleError("the bolt called fail() on this tuple",
                                     component=self.name, stream=tup.stream), "")

    def _execute(self, tup: Any, outbox: Any, last: ComponentFailure, attempts: int) -> None:
        """Retry ``tup`` after a failed attempt, up to ``attempts`` more times."""
        for _attempt in range(attempts):
            fails = len(outbox.fails)
            try:
                self.host.execute(tup)
            except ComponentFailure as exc:
                outbox.emits.clear()
                last = exc
                continue
            if len(outbox.fails) > fails and tup.id in outbox.fails[fails:]:
                self._bolt_failed(tup)
            if outbox.emits:
                try:
                    self._dispatch(outbox.emits)
                except (TypeError, ValueError, OverflowError) as exc:
                    outbox.emits.clear()
                    self._dead_letter(tup.stream, list(tup.values), _encode_error(self.name, exc), "")
                    return
                outbox.emits.clear()
            return
        self.stats.errors += 1
        self._dead_letter(tup.stream, list(tup.values), last, last.traceback_text)

    def tick(self) -> None:
        """Deliver this batch's planned tick (BatchingBolt flushes follow it)."""
        outbox = self.host.outbox
        try:
            if getattr(self.host, "is_tickless", False):
                self.host.flush_tickless()
            else:
                self.host.tick()
        except ComponentFailure:
            self.stats.errors += 1
        if outbox.emits:
            try:
                self._dispatch(outbox.emits)
            except (TypeError, ValueError, OverflowError) as exc:
                self.stats.errors += 1
                outbox.errors.append(str(_encode_error(self.name, exc)))
            outbox.emits.clear()

    def _dispatch(self, emits: list[Any]) -> None:
        """Route one tuple's emits: encode all first, so a bad value drops none of them half-way."""
        pack = self.packer.pack
        if len(emits) == 1:  # the usual case: no list of encodings to build
            e = emits[0]
            packed = [pack(e.values) if e.targets else None]
        else:
            packed = [pack(e.values) if e.targets else None for e in emits]
        stats, plans = self.stats, self.plans
        stats.tuples_out += len(emits)
        for e, v in zip(emits, packed):
            targets = e.targets
            if not targets:
                if e.stream in self.leaf_streams:
                    stats.leaf += 1
                    if self.keep_leaves:
                        self.leaves.append((e.stream, list(e.values)))
                continue
            plan = plans.get((e.stream, targets))
            if plan is None:
                plan = plans[(e.stream, targets)] = self._plan(targets)
            dests, fused = plan
            self.out.add_emit(self.task_id, self.codes[e.stream], v, dests)  # seq even if all fused
            for consumer in fused:
                self.queues[consumer].append((self.task_id, self.codes[e.stream], list(e.values)))

    def _plan(self, targets: Any) -> tuple[tuple[int, ...], tuple[str, ...]]:
        """``(global task ids of rows to other stages, fused consumers)`` of one target set."""
        dests = tuple(self.first_task[c] + i for c, i in targets if c not in self.fused)
        fused = tuple(c for c, _ in targets if c in self.fused)
        return dests, fused

    def drain_counts(self) -> None:
        outbox = self.host.outbox
        self.stats.acks += len(outbox.acks)
        self.stats.fails += len(outbox.fails)
        self.stats.errors += len(outbox.errors)
        outbox.acks.clear()
        outbox.fails.clear()
        outbox.errors.clear()
        del outbox.logs[:]

    def _dead_letter(self, stream: str, values: Any, error: BaseException, trace: str) -> None:
        from stormshift.state.deadletter import DeadLetters

        self.stats.dead_lettered += 1
        DeadLetters(self.r, self.job.namespace).add(
            self.name, stream, _plain(values), f"{type(error).__name__}: {error}",
            trace or "".join(tb.format_exception(error)), self.job.txid,
        )


def _encode_error(component: str, exc: BaseException) -> TupleError:
    return TupleError(
        f"an emitted value cannot be encoded ({exc}); fix: emit JSON-like values "
        "(str, int, float, bool, None, bytes, lists, dicts)",
        component=component,
    )


def _plain(values: Any) -> Any:
    try:
        msgpack.packb(values, use_bin_type=True)
        return values
    except (TypeError, ValueError, OverflowError):
        return [repr(v) for v in values] if isinstance(values, (list, tuple)) else repr(values)


def run_partition(job: StageJob, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """mapInArrow body for one task of ``job.stage`` (module doc steps 1-4)."""
    from stormshift.state.scope import TaskScope

    ensure_paths(job.layout.graph)
    table = R.sorted_table(batches)  # Step 1.
    task, table = R.split_beacons(table, job.layout.first_task(job.stage.head))
    if task is None:
        return  # no beacon: a partition the plan did not make (cannot happen with repartitionById)
    r = redis_for(job.redis_url)
    out = R.RowBuilder()
    members = job.stage.members
    queues: dict[str, list[tuple[int, int, list[Any]]]] = {m: [] for m in members[1:]}
    done: list[_Member] = []
    for position, name in enumerate(members):  # Step 2.
        member = _Member(job, name, task, r, out, {m: queues[m] for m in members[position + 1:]
                                                   if m in _fused_consumers(job, name)})
        member.open()
        with TaskScope(r, job.namespace, name, task, job.txid, member.epoch):
            if position == 0:
                member.stats.maxseq = R.max_seq_by_src(table)
                member.run_tuples(R.iter_rows(table))
            else:
                member.run_tuples(iter(queues.pop(name)))
            if name in job.ticks:
                member.tick()
        member.drain_counts()
        member.close()
        done.append(member)
    _write_stats(r, job, task, done)  # Step 4.
    yield from out.batches()


def _fused_consumers(job: StageJob, name: str) -> set[str]:
    graph = job.layout.graph
    return {m for m in job.stage.members[1:]
            if any(i.source == name for i in graph.component(m).inputs)}


def _write_stats(r: Any, job: StageJob, task: int, members: list[_Member]) -> None:
    mapping = {}
    for m in members:
        s = m.stats
        mapping[f"{m.name}:{task}"] = msgpack.packb(
            [s.tuples_in, s.tuples_out, s.acks, s.fails, s.errors, s.dead_lettered, s.leaf,
             s.reused, list(s.maxseq.items())], use_bin_type=True,
        )
    key = stats_key(job.namespace, job.txid)
    pipe = r.pipeline(transaction=False)
    pipe.hset(key, mapping=mapping)
    pipe.expire(key, 86400)
    pipe.execute()
