"""One stage of one batch in one Spark task: host the bolts of a stage for task *i*.

Runs inside ``mapInArrow`` (a Python worker). A partition holds the rows of
one task of the stage's head (``repartitionById`` put them there; its beacon
row names the task), and member *m* runs as task *i* of *m* too. Per batch:

1. sort the partition's rows by ``(src, seq)`` (shuffle order is not
   deterministic; Storm's per-source order is kept, interleaving fixed);
2. for each member in order: take an epoch, get the instance holding the
   state of txid-1 (``taskstate``), run its tuples inside a ``TaskScope``
   (maps flush fenced at the end), deliver the batch's tick if it was
   planned, snapshot its state at txid;
3. emits go to fused members in process (task *i* -> task *i*), to other
   stages as rows, and leaf emits to the sink (``output.py``);
4. write the task's counters for the driver's progress line and summary.

Retry policy (the one place it is written down): a tuple whose ``process()``
raises is retried in the task up to ``max_attempts`` times in all (emits of a
failed attempt are discarded), then dead-lettered with its error and
traceback (reason ``raised``); the batch goes on without it. A failed attempt
may have changed the bolt's attributes before it raised, so a member that saw
one is *redone*: its rows, fused queues and state maps of this batch are
dropped, and it runs again from the state of txid-1 with the dead-lettered
tuples skipped (a tuple raising in a redo is dead-lettered at once and forces
another redo). A dead-lettered tuple thus leaves no trace in state, and one
that succeeded on a retry counts once. Dead-lettered at once, because retrying
cannot change the outcome: a tuple of the wrong arity (``arity``), one whose ``process()``
raised a ``TupleError`` (``emit``: it emitted the wrong arity or to an undeclared
stream), one whose emit cannot be encoded (``encode``), and one the bolt ``fail()``s
itself (``fail``: Storm would replay it from the spout; a batch engine has no replay).
A tuple with an emit that cannot be encoded also makes its member redone, as a raise
does: its other emits are in the rows already (emits go there at once, ``output.py``).
Every entry carries its reason, source component and tuple id (``txid:task:n``,
deterministic: rows are sorted); the run summary counts dead letters per reason.
They are written when the task closes, after its fenced snapshot: an attempt that
dies or is fenced first leaves none behind for a tuple its retry then processes.
``stormshift deadletter replay`` sends entries back after a fix (``driver/redrive.py``).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from stormshift.adapters.hostbase import EMPTY
from stormshift.adapters.tuples import Tuple
from stormshift.engines.spark import faults
from stormshift.engines.spark import rows as R
from stormshift.engines.spark.layout import Layout, Stage
from stormshift.engines.spark.runtime.worker import ensure_paths, redis_for
from stormshift.engines.spark.task.counters import (
    MemberStats,
    count_attempt,
    write_stats,
)
from stormshift.engines.spark.task.headinput import HeadInput
from stormshift.engines.spark.task.output import MemberOutput, QueueItem
from stormshift.engines.spark.task.poison import (
    drop_held,
    format_trace,
    held_tuples,
    plain,
    write_dead_letter,
)
from stormshift.engines.spark.task.poison import encode_error as _encode_error
from stormshift.engines.spark.task.poison import retries as _retries
from stormshift.engines.spark.task.sink import SinkSpec, write_leaf
from stormshift.engines.spark.task.taskstate import TaskCache, config_of, dump_state, open_task
from stormshift.errors import ComponentFailure, TupleError
from stormshift.state.keys import attempts_key, sink_marker_key

__all__ = ["StageJob", "run_partition"]

_CACHE = TaskCache()
Poison = dict[str, tuple[str, tuple[Any, ...]]]  # tuple id -> (reason, its dead letter)


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


class _Redo(Exception):
    """A member's run saw a failed attempt: drop its effects and run it again (module doc)."""


class _Member:
    """One hosted bolt task of the stage; its emits go through a ``MemberOutput``."""

    def __init__(self, job: StageJob, name: str, task: int, r: Any, out: R.RowBuilder,
                 queues: dict[str, list[QueueItem]], poison: Poison | None = None, redo: bool = False,
                 flush_attempt: int = 0):
        self.job, self.name, self.task, self.r = job, name, task, r
        # Dead-lettered tuples of an earlier run of this member (by number n): skipped in a redo.
        self.poison: Poison = poison if poison is not None else {}
        # Dead letters of this run, written by close() after the fenced snapshot: an attempt
        # that dies or is fenced before it leaves none (a retry may well process the tuple).
        self.letters: list[tuple[Any, ...]] = []
        self.redo = redo
        self.flush_attempt = flush_attempt  # earlier runs of this member whose flush raised
        self.retry_flush = False  # this run's flush raised: run the member again (a retry)
        self.tainted = False  # a process() attempt raised: state may hold part of it
        self.stats = MemberStats()
        self.output = MemberOutput(job.layout, name, task, out, queues, job.sink.kind != "drop",
                                   self.stats)
        self.host: Any = None

    # -- lifecycle -------------------------------------------------------
    def open(self) -> None:
        from stormshift.adapters.host import host_component
        from stormshift.state.fencing import acquire_epoch
        from stormshift.state.snapshots import SnapshotStore

        job = self.job
        self.epoch = acquire_epoch(self.r, job.namespace, self.name, self.task)
        self.store = SnapshotStore(self.r, job.namespace, job.state_key)
        comp = job.layout.graph.component(self.name)
        key = self.cache_key = (job.namespace, self.name, self.task, config_of(job.layout.graph, comp))
        self.host, reused = open_task(key, job.txid, self.epoch, _CACHE,
                                      lambda: host_component(job.layout.graph, self.name, self.task),
                                      lambda: self.store.load(self.name, self.task, job.txid))
        self.stats.reused = int(reused)
        self.host.router.reset_seq()
        if self.poison and self.host.batching:  # held tuples of earlier batches dead-lettered
            for letter in drop_held(self.host.instance, self.poison):
                self._skip_poison(letter)
        # Keep inst._current_tups per tuple? Delivered emits need no anchors (Storm's acker).
        self.tracks_current = not self.host.deliver_to(self.output.deliver) or self.host.batching

    def close(self) -> None:
        job = self.job
        # Step 4 of taskstate: snapshot at txid (fenced), then keep the live instance.
        self.store.save(self.name, self.task, job.txid, self.epoch, dump_state(self.host.instance))
        for letter in self.letters:  # after the fenced save: a fenced zombie writes none
            write_dead_letter(self.r, job.namespace, job.txid, self.name, self.task, *letter)
        self.host.deliver_to(None)  # the cached instance must not hold this batch's rows
        _CACHE.put(self.cache_key, self.host, job.txid, self.epoch)
        marker = sink_marker_key(job.namespace, job.txid, self.name, self.task)
        write_leaf(job.sink, self.r, marker, self.name, self.task, job.txid, self.output.leaves)

    # -- processing ------------------------------------------------------
    def run_chunks(self, chunks: Iterator[QueueItem]) -> None:
        """Execute ``(src task id, stream code or -1, value lists)`` chunks in order.

        The first attempt of each tuple is inlined here (the per-tuple path, the
        same steps as ``BoltHost.execute``); ``_execute`` runs the retries.
        """
        host, stats, output = self.host, self.stats, self.output
        inst, outbox = host.instance, host.outbox
        process = inst.process
        emits, fails, acks_append = outbox.emits, outbox.fails, outbox.acks.append
        done, bad = host.completion.done, output.bad
        auto_ack_ok = not host.batching  # a BatchingBolt acks when it flushes
        fast_ack = host.plan["ack"]
        poison = self.poison
        track = self.tracks_current
        prefix = f"{self.job.txid}:{self.task}:"
        shapes: dict[tuple[int, int], tuple[Any, ...]] = {}
        new = tuple.__new__
        n = 0
        for src, sid, values_list in chunks:
            shape = shapes.get((src, sid))
            if shape is None:
                shape = shapes[(src, sid)] = self._shape(src, sid)
            source, stream, vtype, arity, mk = shape
            for values in values_list:
                n += 1
                tid = prefix + str(n)
                if poison and tid in poison:
                    self._skip_poison(poison[tid])
                    continue
                if len(values) == arity:  # TupleFactory.maker's tuple, built inline
                    tup = new(Tuple, (tid, source, stream, src, new(vtype, values)))
                else:
                    try:
                        tup = mk(values, tid, src)  # a stream without a values type, or an error
                    except TupleError as exc:
                        self._dead_letter(stream, values, exc, "", "arity", source, tid)
                        continue
                if done:
                    done.clear()
                before = len(fails)
                if track:
                    inst._current_tups = [tup]
                try:
                    process(tup)
                except Exception as exc:  # noqa: BLE001 - the user's error, handled as execute() does
                    self._failed(tup, host._failure(exc, "process", tup))
                    continue
                if auto_ack_ok and inst.auto_ack:
                    if fast_ack:
                        if not done or tid not in done:
                            acks_append(tid)
                    else:
                        inst.ack(tup)
                if track:
                    inst._current_tups = EMPTY
                if emits:
                    output.dispatch(emits)
                if bad:
                    self._encode_failed(tup)
                elif len(fails) > before and tup.id in fails[before:]:
                    self._bolt_failed(tup)
        stats.tuples_in += n

    def _shape(self, src: int, sid: int) -> tuple[Any, ...]:
        """``(source, stream, values type, arity or -1, maker)`` of the tuples from ``src``."""
        source, _ = self.job.layout.task_owner[src]
        stream = self.job.layout.streams[sid][1] if sid >= 0 else "default"
        factory = self.host.tuple_factory
        vtype = factory.types.get((source, stream))
        arity = len(vtype._fields) if vtype is not None else -1
        return source, stream, vtype, arity, factory.maker(source, stream)

    def _failed(self, tup: Any, failure: ComponentFailure) -> None:
        """A failed first attempt: its emits are in the rows, so the member will be redone."""
        self.host.outbox.emits.clear()
        self.output.bad.clear()
        self.tainted = True
        retries = 0 if self.redo else _retries(failure, self.job.max_attempts)
        self._execute(tup, failure, retries)

    def _bolt_failed(self, tup: Any) -> None:
        # The bolt failed the tuple itself: Storm would replay it from the spout
        # (forever, if the failure is deterministic); here it is dead-lettered once.
        self._dead_letter(tup.stream, list(tup.values),
                          TupleError("the bolt called fail() on this tuple",
                                     component=self.name, stream=tup.stream), "",
                          "fail", tup.component, tup.id)

    def _encode_failed(self, tup: Any) -> None:
        """An emit of ``tup`` cannot be encoded: dead-letter it; the redo skips it."""
        exc = self.output.bad[0]
        self.output.bad.clear()
        self.tainted = True  # its other emits and state changes are in this run: redo
        letter = self._dead_letter(tup.stream, list(tup.values), _encode_error(self.name, exc), "",
                                   "encode", tup.component, tup.id)
        self.poison[tup.id] = ("encode", letter)

    def _execute(self, tup: Any, last: ComponentFailure, attempts: int) -> None:
        """Retry ``tup`` after a failed attempt, up to ``attempts`` more times."""
        outbox, output = self.host.outbox, self.output
        for _attempt in range(attempts):
            fails = len(outbox.fails)
            try:
                self.host.execute(tup)
            except ComponentFailure as exc:
                outbox.emits.clear()
                output.bad.clear()
                last = exc
                continue
            if outbox.emits:
                output.dispatch(outbox.emits)
            if output.bad:
                self._encode_failed(tup)
            elif len(outbox.fails) > fails and tup.id in outbox.fails[fails:]:
                self._bolt_failed(tup)
            return
        self.stats.errors += 1
        reason = "emit" if isinstance(last.cause, TupleError) else "raised"
        letter = self._dead_letter(tup.stream, list(tup.values), last, last.traceback_text,
                                   reason, tup.component, tup.id)
        self.poison[tup.id] = (reason, letter)

    def _skip_poison(self, known: tuple[str, tuple[Any, ...]]) -> None:
        """A tuple dead-lettered by an earlier run of this member: skipped, its letter kept."""
        reason, letter = known
        self.letters.append(letter)
        stats = self.stats
        stats.note_error(letter[2], letter[3])
        stats.errors += 1
        stats.fails += 1
        stats.dead_lettered += 1
        stats.reasons[reason] = stats.reasons.get(reason, 0) + 1

    def tick(self) -> None:
        """Deliver this batch's planned tick (BatchingBolt flushes follow it). An emit of the
        flush that cannot be encoded is dropped, counted as an error (no tuple to dead-letter).
        A flush that raises: ``_flush_failed``; held tuples the flush ``fail()``ed are
        dead-lettered (reason ``fail``)."""
        host, outbox, output = self.host, self.host.outbox, self.output
        held = held_tuples(host.instance) if host.batching else {}
        fails_before = len(outbox.fails)
        try:
            if getattr(host, "is_tickless", False):
                host.flush_tickless()
            else:
                host.tick()
        except ComponentFailure as failure:
            self._flush_failed(failure, held)
            return
        if outbox.emits:
            output.dispatch(outbox.emits)
        for exc in output.bad:
            self.stats.errors += 1
            self.stats.note_error(_encode_error(self.name, exc))
            outbox.errors.append(str(_encode_error(self.name, exc)))
        output.bad.clear()
        for tid in outbox.fails[fails_before:]:
            if tid in held:
                self._bolt_failed(held[tid])

    def _flush_failed(self, failure: ComponentFailure, held: dict[str, Any]) -> None:
        """A tick or flush raised. A plain bolt's ``process_tick``: an error, counted. A
        BatchingBolt's flush: its emits so far are in the rows, so the member is redone;
        retried (the whole member) up to ``max_attempts`` runs, then the batch being flushed
        is dead-lettered (reason ``raised``, or ``emit`` for an emit the topology does not
        declare) and a redo flushes the other batches without it."""
        self.host.outbox.emits.clear()
        self.output.bad.clear()
        self.stats.note_error(failure)
        batch = [t for t in failure.tup if t.id in held] if isinstance(failure.tup, list) else []
        if not batch:
            self.stats.errors += 1
            return
        self.tainted = True
        emit_error = isinstance(failure.cause, TupleError)
        if not emit_error and self.flush_attempt + 1 < self.job.max_attempts:
            self.retry_flush = True
            return
        self.stats.errors += 1
        for tup in batch:
            letter = self._dead_letter(tup.stream, list(tup.values), failure, failure.traceback_text,
                                       "emit" if emit_error else "raised", tup.component, tup.id,
                                       note=False)
            self.poison[tup.id] = ("emit" if emit_error else "raised", letter)

    def drain_counts(self) -> None:
        outbox = self.host.outbox
        self.stats.acks += len(outbox.acks)
        self.stats.fails += len(outbox.fails)
        self.stats.errors += len(outbox.errors)
        outbox.acks.clear()
        outbox.fails.clear()
        outbox.errors.clear()
        self.stats.take_logs(outbox.logs)  # to the driver's log file (engines/logs.py)
        del outbox.logs[:]

    def _dead_letter(self, stream: str, values: Any, error: BaseException, trace: str,
                     reason: str, source: str, tuple_id: str, note: bool = True) -> tuple[Any, ...]:
        """Dead-letter one input tuple (written by ``close``)."""
        stats = self.stats
        if note:
            stats.note_error(error, trace)
        stats.dead_lettered += 1
        stats.reasons[reason] = stats.reasons.get(reason, 0) + 1
        letter = (stream, plain(values), error, trace or format_trace(error), reason, source, tuple_id)
        self.letters.append(letter)
        return letter


def run_partition(jobs: Mapping[str, StageJob], batches: Iterator[pa.RecordBatch],
                  seen: dict[str, str] | None = None) -> Iterator[pa.RecordBatch]:
    """mapInArrow body for one task of one of ``jobs``' stages (by head; module doc steps 1-4).

    The partition's beacon names the task: its global task id gives the
    component, so the stage, of a group of stages run as one Spark stage.
    """
    from stormshift.errors import FencedError

    layout = next(iter(jobs.values())).layout
    ensure_paths(layout.graph)
    table = R.sorted_table(batches)  # Step 1.
    dest, table = R.split_beacons(table)
    if dest is None:
        return  # no beacon: a partition the plan did not make (cannot happen with repartitionById)
    name, task = layout.task_owner[dest]
    job = jobs[layout.stage_of[name].head]
    if seen is not None:
        seen["head"] = job.stage.head
    r = redis_for(job.redis_url)
    attempt = faults.attempt_number()
    if count_attempt(r, job.namespace, job.txid, job.stage.head, task) > 1 or attempt:
        r.hincrby(attempts_key(job.namespace), "retried", 1)
    faults.hit("stage.start", txid=job.txid, component=job.stage.head, task=task, attempt=attempt)
    try:
        done = _run_members(job, task, table, r)
    except FencedError:
        # A newer attempt of this task owns it (this one is a zombie): none of our writes landed.
        r.hincrby(attempts_key(job.namespace), "fenced", 1)
        raise
    write_stats(r, job.namespace, job.txid, task, {m.name: m.stats for m in done[0]})  # Step 4.
    yield from done[1].batches()


def _run_members(job: StageJob, task: int, table: pa.Table, r: Any) -> tuple[list[_Member], R.RowBuilder]:
    """Step 2 for every member of the stage, in order (fused members read in process)."""
    from stormshift.state.scope import TaskScope

    out = R.RowBuilder()
    members = job.stage.members
    queues: dict[str, list[QueueItem]] = {m: [] for m in members[1:]}
    done: list[_Member] = []
    for position, name in enumerate(members):
        feeds = {m: queues[m] for m in members[position + 1:] if m in job.layout.fed_by(job.stage, name)}
        ctx = {"txid": job.txid, "component": name, "task": task}
        poison: Poison = {}
        redo, flush_attempt = False, 0
        while True:
            mark, fed = out.mark(), {m: len(q) for m, q in feeds.items()}
            member = _Member(job, name, task, r, out, feeds, dict(poison), redo, flush_attempt)
            member.open()
            try:
                with TaskScope(r, job.namespace, name, task, job.txid, member.epoch):
                    _run_member(job, member, position, table, queues, ctx)
                    if member.tainted:
                        raise _Redo  # the scope drops this run's map writes
            except _Redo:
                out.rewind(mark)
                for m, n in fed.items():
                    del feeds[m][n:]
                if member.retry_flush:
                    flush_attempt += 1  # a flush retried: the same poison, one attempt more
                elif redo and member.poison.keys() == poison.keys():  # pragma: no cover
                    raise RuntimeError(f"{name}:{task}: a redo found no new dead letter") from None
                # The next run restores the state of txid-1 (open() popped the live instance).
                poison, redo = member.poison, True
                continue
            break
        queues.pop(name, None)
        member.drain_counts()
        faults.hit("task.before_close", resume=member.close, **ctx)
        member.close()
        done.append(member)
    return done, out


def _run_member(job: StageJob, member: _Member, position: int, table: pa.Table,
                queues: dict[str, list[QueueItem]], ctx: dict[str, Any]) -> None:
    """One run of a member over its input: the partition's rows (head) or its fused queue."""
    if position == 0:
        feed = HeadInput(table, job.layout, job.redis_url, job.namespace)
        member.run_chunks(faults.midway(iter(feed), ctx) if faults.active() else iter(feed))
        member.stats.maxseq = feed.maxseq
    else:
        member.run_chunks(iter(queues[member.name]))
    if member.name in job.ticks:
        member.tick()
