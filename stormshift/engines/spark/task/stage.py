"""One stage of one batch in one Spark task: host the bolts of a stage for task *i*.

Runs inside ``mapInArrow`` (a Python worker). A partition holds the rows of
one task of the stage's head (``repartitionById`` put them there; its beacon
row names the task), and member *m* runs as task *i* of *m* too. Per batch:

1. sort the partition's rows by ``(src, seq)`` (shuffle order is not
   deterministic; Storm's per-source order is kept, interleaving fixed);
2. for each member in order: open its task transaction (``state/task_txn.py``:
   take an epoch), get the instance holding the state of txid-1
   (``taskstate``), run its tuples inside the transaction's ``TaskScope``,
   deliver the batch's tick if it was planned;
3. emits go to fused members in process (task *i* -> task *i*), to other
   stages as rows, and leaf emits to the sink (``output.py``);
4. close each member: its map writes, snapshot at txid, dead letters, ``redis:``
   sink emits and counters go in ONE fenced commit (the transaction's one
   idempotence rule), then a ``jsonl:`` sink's files.

Each member's tuples run through the per-tuple kernel (``adapters/kernel.py``),
a chunk at a time; a tuple whose attempt is not OK is retried, dead-lettered
and its member redone as ``adapters/retry_policy.py`` decides (the words are
defined there), and whether the member is done or runs again is
``adapters/attempts.py``'s ``MemberAttempts`` (an explicit status per member).
Here a redo drops the member's rows, fused queues and state map writes of this
batch (``TaskTxn.abort`` discards its ``TaskScope``) and runs it again from the
state of txid-1 with its dead-lettered tuples skipped, so a
dead-lettered tuple leaves no trace in state and one that succeeded on a retry
counts once. Emits go to the rows at once (``output.py``), so an emit that
cannot be encoded forces a redo as a raise does. Every dead letter carries its
reason, source component and tuple id (``txid:task:n``, deterministic: rows
are sorted); the run summary counts them per reason. They are written when the
task closes, after its fenced snapshot: an attempt that dies or is fenced first
leaves none behind for a tuple its retry then processes.
``stormshift deadletter replay`` sends entries back after a fix (``driver/redrive.py``).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from stormshift.adapters.attempts import AttemptStatus, MemberAttempts
from stormshift.adapters.kernel import Kernel
from stormshift.adapters.retry_policy import Action, Outcome, RetryPolicy
from stormshift.engines.logs import max_lines_per_task
from stormshift.engines.spark.diagnostics import faults
from stormshift.engines.spark.protocol import rows as R
from stormshift.engines.spark.protocol.layout import Layout, Stage
from stormshift.engines.spark.records import batchstats
from stormshift.engines.spark.runtime.worker import ensure_paths, redis_for
from stormshift.engines.spark.task.counters import MemberStats
from stormshift.engines.spark.task.headinput import HeadInput
from stormshift.engines.spark.task.output import MemberOutput, QueueItem
from stormshift.engines.spark.task.poison import (
    PendingLetter,
    drop_held,
    format_trace,
    held_tuples,
    stage_dead_letter,
)
from stormshift.engines.spark.task.poison import encode_error as _encode_error
from stormshift.engines.spark.task.sink import SinkSpec, write_files
from stormshift.engines.spark.task.taskstate import (
    TaskCache,
    config_of,
    open_task,
    snapshot_of,
    snapshot_written,
)
from stormshift.engines.spark.task.windowing import BatchTime
from stormshift.engines.spark.task.windowing import finish as finish_windows
from stormshift.engines.spark.task.windowing import report as report_windows
from stormshift.engines.spark.task.windowing import start as start_windows
from stormshift.errors import ComponentFailure, TupleError
from stormshift.state.client import Redis
from stormshift.state.deadletter import plain
from stormshift.state.target import Target, parse_targets

__all__ = ["StageJob", "run_partition", "run_task"]

_CACHE = TaskCache()
Poison = dict[str, tuple[str, PendingLetter]]  # tuple id -> (reason, its dead letter)


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
    time: BatchTime | None = None  # windows and end of input (``windowing.py``)
    task_hosts: int = 0  # host slots per executor (``task_host.py``); 0: run in the worker
    home_key: bytes = b""  # the run's key for tasks' homes on other executors (``homes.py``)
    # task indexes that run nothing when no row comes for them (``driver/waves.idle_tasks``)
    idle_ok: frozenset[int] = frozenset()
    # beacons of the tasks reading this stage's group, sent by its task 0 (``rows.beacons_batch``)
    beacons: tuple[int, ...] = ()


def targets_of(graph: Any, component: str) -> list[Target]:
    """The ``cutover.sink`` targets fed by ``component``'s leaf streams."""
    return [t for t in parse_targets(graph.config).values() if t.component == component]


class _Member:
    """One hosted bolt task of the stage; its emits go through a ``MemberOutput``."""

    def __init__(self, job: StageJob, name: str, task: int, r: Redis, out: R.RowBuilder,
                 queues: dict[str, list[QueueItem]], poison: Poison | None = None, redo: bool = False,
                 flush_attempt: int = 0):
        self.job, self.name, self.task, self.r = job, name, task, r
        # Dead-lettered tuples of an earlier run of this member (by number n): skipped in a redo.
        self.poison: Poison = poison if poison is not None else {}
        # Dead letters of this run, written by close() after the fenced snapshot: an attempt
        # that dies or is fenced before it leaves none (a retry may well process the tuple).
        self.letters: list[PendingLetter] = []
        self.redo = redo
        self.flush_attempt = flush_attempt  # earlier runs of this member whose flush raised
        self.retry_flush = False  # this run's flush raised: run the member again (a retry)
        self.tainted = False  # a decision said redo: state may hold part of a failed attempt
        self.policy = RetryPolicy(job.max_attempts)
        self.kernel: Kernel | None = None  # batch mode, from run_chunks
        self.stats = MemberStats()
        self.targets = targets_of(job.layout.graph, name)  # cutover.sink: the legacy's target
        self.output = MemberOutput(job.layout, name, task, out, queues,
                                   job.sink.kind != "drop" or bool(self.targets),
                                   self.stats, job.sink.kept_streams(name))
        self.host: Any = None
        self.log_limit: int | None = None  # -o stormshift.logs.max_lines_per_task (open)
        self.window_counters: dict[str, int] | None = None  # at the start (windowing.py)

    # -- lifecycle -------------------------------------------------------
    def open(self) -> None:
        """Steps 1-2 of the task transaction: an epoch, then the state of txid-1."""
        from stormshift.adapters.host import host_component
        from stormshift.state.snapshots import SnapshotStore
        from stormshift.state.task_txn import TaskTxn

        job = self.job
        self.txn = TaskTxn(self.r, job.namespace, self.name, self.task, job.txid,
                           SnapshotStore(self.r, job.namespace, job.state_key))
        self.epoch = self.txn.begin()
        comp = job.layout.graph.component(self.name)
        key = self.cache_key = (job.namespace, self.name, self.task, config_of(job.layout.graph, comp))
        self.host, how = open_task(key, job.txid, self.epoch, _CACHE,
                                   lambda: host_component(job.layout.graph, self.name, self.task),
                                   self.txn.restore_point, self.txn.catch_up_point)
        self.stats.reused = int(how == "reused")
        self.stats.caught_up = int(how == "caught_up")
        self.stats.started = int(how == "started")
        self.host.router.reset_seq()
        self.log_limit = max_lines_per_task(self.host.conf, self.name)
        if self.poison and self.host.batching:  # held tuples of earlier batches dead-lettered
            for letter in drop_held(self.host.instance, self.poison):
                self._skip_poison(letter)
        # Keep inst._current_tups per tuple? Delivered emits need no anchors (Storm's acker).
        self.tracks_current = not self.host.deliver_to(self.output.deliver) or self.host.batching

    def close(self) -> None:
        """Steps 4-8 of the task transaction (taskstate's step 4: the snapshot at txid), then
        keep the live instance and write a ``jsonl:`` sink's files."""
        job, txn = self.job, self.txn
        payload, *how = snapshot_of(self.host, job.txid)  # a delta, or now and then a base
        txn.snapshot(payload, *how)
        self.stats.state_bytes = len(payload) + txn.map_bytes()  # snapshot + keyed maps
        for letter in self.letters:  # in the commit after the snapshot: a fenced zombie writes none
            stage_dead_letter(txn, letter)
        if job.sink.kind == "redis" and self.output.leaves:
            txn.sink(job.sink.target, self.output.leaves)
        self.stats.windows = report_windows(self)
        txn.counters(self.stats.pack())
        txn.commit()
        snapshot_written(self.host, job.txid, txn.snapshot_head)
        self.host.deliver_to(None)  # the cached instance must not hold this batch's rows
        _CACHE.put(self.cache_key, self.host, job.txid, self.epoch)
        write_files(job.sink, self.name, self.task, job.txid, self.output.leaves)
        self._write_targets()

    def _write_targets(self) -> None:
        """The legacy's own target (``cutover.sink``), after the fenced commit: a fenced
        attempt writes none, a re-run of an applied txid writes nothing (``state/target.py``)."""
        from stormshift.state.connection import run_scripts
        from stormshift.state.target import target_call

        graph = self.job.layout.graph
        for target in self.targets:
            fields = graph.stream_fields(self.name, target.stream.partition(":")[2])
            if target.shape == "kafka":  # its own guard (state/target_kafka.py)
                from stormshift.state import target_kafka

                target_kafka.write(self.r, self.job.namespace, target, f"{self.name}:{self.task}",
                                   self.job.txid, target_kafka.kafka_messages(
                                       target, fields, self.output.leaves))
                continue
            call = target_call(target, fields, f"{self.name}:{self.task}", self.job.txid,
                               self.output.leaves)
            if call is not None:
                run_scripts(redis_for(target.url) if target.url else self.r, [call])

    # -- processing ------------------------------------------------------
    def run_chunks(self, chunks: Iterator[QueueItem]) -> None:
        """Execute ``(src task id, stream code or -1, value lists)`` chunks in order (the
        kernel's ``run_chunks``; tuple ids ``txid:task:n``)."""
        self.kernel = Kernel(self.host, self.output.dispatch, self.output.bad, self.tracks_current)
        self.stats.tuples_in += self.kernel.run_chunks(
            chunks, self._shape, f"{self.job.txid}:{self.task}:", self.poison,
            self._skip, self._settle, self.stats.latency, R.UNPACK)

    def _shape(self, src: int, sid: int) -> tuple[str, str]:
        """The source component and stream of the tuples from task ``src`` on stream ``sid``."""
        source, _ = self.job.layout.task_owner[src]
        return source, (self.job.layout.streams[sid][1] if sid >= 0 else "default")

    def _settle(self, tup: Any, outcome: Outcome, detail: Any) -> None:
        """A tuple whose first attempt was not OK: the policy's retries, then its decision."""
        decision = self.policy.after_attempt(outcome, 1, self.redo)
        if decision.action is Action.RETRY:
            self.tainted = True  # the failed attempt may have changed state: redo
            outcome, detail, decision = self.kernel.retry(tup, self.policy, self.redo)  # type: ignore[union-attr]
        self.tainted = self.tainted or decision.redo
        if decision.action is not Action.DEAD_LETTER:
            return
        if outcome is Outcome.RAISED or outcome is Outcome.EMIT:
            self.stats.errors += 1
            error, trace = detail, detail.traceback_text
        elif outcome is Outcome.ENCODE:
            error, trace = _encode_error(self.name, detail), ""
        elif outcome is Outcome.FAILED:
            # Storm would replay it from the spout (forever, if the failure is deterministic)
            error, trace = TupleError("the bolt called fail() on this tuple",
                                      component=self.name, stream=tup.stream), ""
        else:  # ARITY: the values as they came, never a tuple of the bolt
            error, trace = detail, ""
        values = tup.values if outcome is Outcome.ARITY else list(tup.values)
        letter = self._dead_letter(tup.stream, values, error, trace, decision.reason,
                                   tup.component, tup.id)
        if decision.skip:
            self.poison[tup.id] = (decision.reason, letter)

    def _skip(self, tid: str) -> None:
        self._skip_poison(self.poison[tid])

    def _skip_poison(self, known: tuple[str, PendingLetter]) -> None:
        """A tuple dead-lettered by an earlier run of this member: skipped, its letter kept."""
        reason, letter = known
        self.letters.append(letter)
        stats = self.stats
        stats.note_error(letter.error, letter.trace)
        stats.errors += 1
        stats.fails += 1
        stats.dead_lettered += 1
        stats.reasons[reason] = stats.reasons.get(reason, 0) + 1

    def tick(self, call: Any = None) -> None:
        """Deliver this batch's planned tick (BatchingBolt flushes follow it), or ``call``
        an engine hook of the instance the same way (``windowing.py``). An emit of the
        flush that cannot be encoded is dropped, counted as an error (no tuple to dead-letter).
        A flush that raises: ``_flush_failed``; held tuples the flush ``fail()``ed are
        dead-lettered (reason ``fail``)."""
        host, outbox, output = self.host, self.host.outbox, self.output
        held = held_tuples(host.instance) if host.batching else {}
        fails_before = len(outbox.fails)
        try:
            if call is not None:
                call()
            elif getattr(host, "is_tickless", False):
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
                self._settle(held[tid], Outcome.FAILED, None)

    def _flush_failed(self, failure: ComponentFailure, held: dict[str, Any]) -> None:
        """A tick or flush raised: the policy's ``after_flush``. A plain bolt's
        ``process_tick``: an error, counted. A BatchingBolt's flush: its emits so far are in
        the rows, so the member is redone: run again (a retry), or the batch being flushed
        is dead-lettered and a redo flushes the other batches without it."""
        self.host.outbox.emits.clear()
        self.output.bad.clear()
        self.stats.note_error(failure)
        batch = [t for t in failure.tup if t.id in held] if isinstance(failure.tup, list) else []
        outcome = Outcome.EMIT if isinstance(failure.cause, TupleError) else Outcome.RAISED
        decision = self.policy.after_flush(outcome, self.flush_attempt, bool(batch))
        self.tainted = self.tainted or decision.redo
        if decision.action is Action.RETRY:
            self.retry_flush = True
            return
        self.stats.errors += 1
        if decision.action is not Action.DEAD_LETTER:
            return
        for tup in batch:
            letter = self._dead_letter(tup.stream, list(tup.values), failure, failure.traceback_text,
                                       decision.reason, tup.component, tup.id, note=False)
            if decision.skip:
                self.poison[tup.id] = (decision.reason, letter)

    def drain_counts(self) -> None:
        self.output.settle()
        outbox = self.host.outbox
        self.stats.acks += len(outbox.acks)
        self.stats.fails += len(outbox.fails)
        self.stats.errors += len(outbox.errors)
        outbox.acks.clear()
        outbox.fails.clear()
        outbox.errors.clear()
        self.stats.take_logs(outbox.logs, self.log_limit)  # to the driver's log file (engines/logs.py)
        del outbox.logs[:]

    def _dead_letter(self, stream: str, values: Any, error: BaseException, trace: str,
                     reason: str, source: str, tuple_id: str, note: bool = True) -> PendingLetter:
        """Dead-letter one input tuple (written by ``close``)."""
        stats = self.stats
        if note:
            stats.note_error(error, trace)
        stats.dead_lettered += 1
        stats.reasons[reason] = stats.reasons.get(reason, 0) + 1
        letter = PendingLetter(stream, plain(values), error, trace or format_trace(error), reason, source,
                            tuple_id)
        self.letters.append(letter)
        return letter


def run_partition(jobs: Mapping[str, StageJob], batches: Iterator[pa.RecordBatch],
                  seen: dict[str, str] | None = None,
                  hosted: Callable[..., list[pa.RecordBatch]] | None = None) -> Iterator[pa.RecordBatch]:
    """mapInArrow body for the Storm tasks of ``jobs``' stages (by head) a partition holds,
    one after the other, each with its own transaction and fence (module doc steps 1-4).

    A task's beacon names it: its global task id gives the component, so the
    stage, of a group of stages run as one Spark stage. Task 0 of a job with
    ``beacons`` sends them first. A task with no row that its job lists as
    ``idle_ok`` runs nothing. ``hosted(dest, job, task, table,
    attempt)`` runs a task on its task host (``task_host.run_on_host``) when the
    job has host slots; else it runs here.
    """
    layout = next(iter(jobs.values())).layout
    ensure_paths(layout.graph)
    table = R.sorted_table(batches)  # Step 1.
    attempt = faults.attempt_number()
    for dest, rows in R.split_tasks(table):
        name, task = layout.task_owner[dest]
        job = jobs[layout.stage_of[name].head]
        if task == 0 and job.beacons:
            yield R.beacons_batch(job.beacons)
        if rows.num_rows == 0 and task in job.idle_ok:
            continue
        if seen is not None:
            seen["head"] = job.stage.head
        r = redis_for(job.redis_url)
        if batchstats.count_attempt(r, job.namespace, job.txid, job.stage.head, task) > 1 or attempt:
            batchstats.note(r, job.namespace, "retried")
        faults.hit("stage.start", txid=job.txid, component=job.stage.head, task=task, attempt=attempt)
        if hosted is not None and job.task_hosts:
            yield from hosted(dest, job, task, rows, attempt)
        else:
            yield from run_task(job, task, rows, r).batches()


def run_task(job: StageJob, task: int, table: pa.Table, r: Redis) -> R.RowBuilder:
    """Steps 2-4 for task ``task`` of ``job``'s stage, in this process (a worker or a task
    host): the rows it sends on."""
    from stormshift.engines.external import redirect_for
    from stormshift.errors import FencedError

    redirect_for(job.layout.graph)  # a shadow port's components write its scratch Redis
    try:
        return _run_members(job, task, table, r)
    except FencedError:
        # A newer attempt of this task owns it (this one is a zombie): none of our writes landed.
        batchstats.note(r, job.namespace, "fenced")
        raise


def _run_members(job: StageJob, task: int, table: pa.Table, r: Redis) -> R.RowBuilder:
    """Steps 2 and 4 for every member of the stage, in order (fused members read in process)."""
    out = R.RowBuilder()
    members = job.stage.members
    queues: dict[str, list[QueueItem]] = {m: [] for m in members[1:]}
    for position, name in enumerate(members):
        feeds = {m: queues[m] for m in members[position + 1:] if m in job.layout.fed_by(job.stage, name)}
        ctx = {"txid": job.txid, "component": name, "task": task}
        attempts = MemberAttempts(f"component {name!r} task {task}")
        for run in attempts.runs():
            mark, fed = out.mark(), {m: len(q) for m, q in feeds.items()}
            member = _Member(job, name, task, r, out, feeds, run.poison, run.redo, run.flush_attempt)
            member.open()
            with member.txn.scope():
                started = time.perf_counter_ns()
                _run_member(job, member, position, table, queues, ctx)
                member.stats.busy_us = (time.perf_counter_ns() - started) // 1000
            if member.output.misrouted:  # keyed fusion's check (output.py): nothing committed
                raise member.output.misrouted_error(job.txid)
            if attempts.finish(member.tainted, member.retry_flush, member.poison) is AttemptStatus.REDO:
                # drop this run's map writes, rows and fused queues; the next run restores the
                # state of txid-1 (open() popped the live instance)
                member.txn.abort()
                out.rewind(mark)
                for m, n in fed.items():
                    del feeds[m][n:]
        queues.pop(name, None)
        member.drain_counts()
        member.stats.sent = out.sent(mark[0])
        faults.hit("task.before_close", resume=member.close, **ctx)
        member.close()
    return out


def _run_member(job: StageJob, member: _Member, position: int, table: pa.Table,
                queues: dict[str, list[QueueItem]], ctx: dict[str, Any]) -> None:
    """One run of a member over its input: the partition's rows (head) or its fused queue,
    between the batch's time and end of input (``windowing.py``)."""
    start_windows(member, job.time)
    if position == 0:
        feed = HeadInput(table, job.layout, job.redis_url, job.namespace)
        member.run_chunks(faults.midway(R.decoded_chunks(feed), ctx) if faults.active() else iter(feed))
        member.stats.maxseq = feed.maxseq
    else:  # a fused member: its queue (``task.midway`` fires half-way through it too)
        queued = iter(queues[member.name])
        member.run_chunks(faults.midway(queued, ctx) if faults.active() else queued)
    if member.name in job.ticks:
        member.tick()
    finish_windows(member, job.time)
