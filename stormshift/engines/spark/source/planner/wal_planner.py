"""A generic spout's planning side: its tasks run here, their emits are logged before an offset leaves.

``WalPlanner`` runs in Spark's long-lived planner process of the source
(``source.py`` doc): it hosts the spout's tasks, runs their ``next_tuple()``,
appends the emits -- routed by each task's router, with the plan's colocated
heads (``Layout.colocated``) -- to the write-ahead log (``stormshift.engines.spark.records.wal``),
and acks a batch's tuples once it committed. ``next_tuple`` runs while a batch is
planned, within ``budget_ms`` (the default), or, with ``stormshift.spout.lead_batches``
> 0, in the pump thread (``pump.py``), up to that many batches ahead of the planned
offsets, while Spark runs batches.
"""

from __future__ import annotations

import collections
import time
from typing import Any

import msgpack

from stormshift.engines.spark.diagnostics import faults
from stormshift.engines.spark.protocol.layout import Layout
from stormshift.engines.spark.records.wal import content_digest
from stormshift.engines.spark.source.options import Opts, WalPartition
from stormshift.engines.spark.source.planner.offsets import (
    after_done,
    counts_of,
    limits,
    next_offset,
    over_budget,
    resume,
)
from stormshift.engines.spark.source.planner.pump import (
    DEFAULT_LEAD_BATCHES,
    FULL_WAIT_SECS,
    Pump,
    SpoutLock,
)
from stormshift.engines.spark.source.spout_report import SpoutReport

__all__ = ["WalPlanner"]

_EMPTY_SLEEP_SECS = 0.001
PUMP_CHUNK_MS = 20  # the pump logs a chunk at least this often (and at each batch_max boundary)


class WalPlanner:
    """Generic spout tasks + their write-ahead logs (module ``source`` doc)."""

    def __init__(self, opts: Opts):
        from stormshift.adapters.host import SpoutHost
        from stormshift.engines.spark.records.wal import DEFAULT_SEEN_WINDOW, WriteAheadLog
        from stormshift.engines.spark.runtime.worker import redis_for

        self.opts = opts
        self.comp = opts.graph.component(opts.spout)
        layout = Layout(opts.graph)
        self.colocated = layout.colocated(opts.spout)  # routed to their task i, never remapped
        self.codes = {s: layout.stream_code[(opts.spout, s)] for s in self.comp.outputs}
        self.first = {c.name: c.first_task_id for c in opts.graph}
        self.target_ids: dict[Any, list[int]] = {}  # an emit's targets -> their task ids (shared)
        r = redis_for(opts.redis_url)
        window = int(opts.graph.config.get("stormshift.spout.seen_window", DEFAULT_SEEN_WINDOW))
        self.wals = [WriteAheadLog(r, opts.namespace, opts.spout, i, window) for i in range(self.comp.par)]
        self.heads = [w.open_for_append() for w in self.wals]
        self.hosts = []
        for i in range(self.comp.par):
            host = SpoutHost(opts.graph, opts.spout, i, colocated=self.colocated)
            host.open()
            self.hosts.append(host)
        # msg ids of logged, not yet acked tuples: per task, (end seq of chunk, [msg ids])
        self.unacked: list[collections.deque[tuple[int, list[Any]]]] = [
            collections.deque() for _ in self.hosts
        ]
        # replays the log already holds: per task, (seq of the logged original, msg id)
        self.replayed: list[list[tuple[int, Any]]] = [[] for _ in self.hosts]
        self.logged = 0
        self.dropped_replays = 0
        self.rejected = 0  # emits dead-lettered before they reached the log
        self.packer = msgpack.Packer(use_bin_type=True)
        self.report = SpoutReport(r, opts.namespace, opts.spout, opts.graph.config)  # errors, logs -> the driver
        self.last_new = [time.monotonic()] * len(self.hosts)  # last time a task logged tuples
        self.lock = SpoutLock()  # held by every call into the spout and every change of the above
        lead = int(opts.graph.config.get("stormshift.spout.lead_batches", DEFAULT_LEAD_BATCHES))
        self.lead = max(lead, 0) * opts.batch_max  # tuples logged ahead of the planned offset
        self.planned = [w.first_seq(h) for w, h in zip(self.wals, self.heads)]
        self.planned_total: int | None = None  # spout tuples in batches up to the planned offset
        self.pump: Pump | None = None
        if self.lead > 0:
            self.pump = Pump(self._pump_step, f"stormshift-pump-{opts.spout}")
            self.pump.start()

    def initial_offset(self) -> dict:
        """A new query starts at the oldest tuple still logged (nothing logged is lost)."""
        with self.lock.planner():
            starts = [w.first_seq(h) for w, h in zip(self.wals, self.heads)]
        return {"t": starts, "n": [0] * len(starts), "done": False, "fin": False, "k": 0,
                "capped": False}

    def latest_offset(self, start: dict) -> dict:
        """Each task's next logged tuples, up to ``batch_max`` and its ``--max-tuples`` target
        (a ``next_tuple`` that emits past it logs the rest for a later run). With the pump
        the tuples are logged already; without it they are pulled here."""
        if self.pump is not None:
            self.pump.check()
        start = resume(self.opts, start)
        if start.get("done"):
            return after_done(self.opts, start)
        with self.lock.planner():
            end = self._plan(start)
        if self.pump is not None:
            self.pump.wake()
        return end

    def _plan(self, start: dict) -> dict:
        t = list(start["t"])
        counts = counts_of(start, len(self.hosts))
        ended = [self._ended(i, t[i]) for i in range(len(self.hosts))]
        for i, limit in enumerate(limits(self.opts, counts, ended)):
            if self.heads[i] - t[i] < limit:
                if self.pump is None:
                    self._pull(i, limit - (self.heads[i] - t[i]), self.opts.budget_ms, True)
                self._check_idle(i)
            take = min(self.heads[i] - t[i], limit)
            t[i] += take
            counts[i] += take
        capped = over_budget(self.opts, counts)
        done = capped or all(self._ended(i, t[i]) for i in range(len(self.hosts)))
        self.planned = [max(p, x) for p, x in zip(self.planned, t)]
        self.planned_total = sum(counts)
        in_flight = any(self.unacked) or any(self.replayed)
        return next_offset(self.opts, start, "t", t, done, t == list(start["t"]), counts, capped,
                           in_flight)

    def _room(self, i: int) -> int:
        """Tuples the pump may log for task i now: up to ``lead`` ahead of the planned
        offset, and under ``--max-tuples`` no more than the run still plans (none before
        the first plan tells how many it planned already)."""
        room = self.lead - (self.heads[i] - self.planned[i])
        if self.opts.max_total >= 0:
            if self.planned_total is None:
                return 0
            room = min(room, self.opts.max_total - self.planned_total - (self.heads[i] - self.planned[i]))
        return room

    def _pump_step(self) -> float:
        """One chunk of every task with room (the pump thread's loop body): seconds to wait."""
        wait: float | None = None
        for i in range(len(self.hosts)):
            with self.lock.pump():
                if self.hosts[i].exhausted:
                    continue
                room = self._room(i)
                if room <= 0:
                    self.last_new[i] = time.monotonic()  # held back by the lead: not idle
                    continue
                to_boundary = self.opts.batch_max - self.heads[i] % self.opts.batch_max
                if self._pull(i, min(room, to_boundary), PUMP_CHUNK_MS, False):
                    wait = 0.0
                elif wait is None:
                    wait = _EMPTY_SLEEP_SECS  # the spout had nothing: poll it again soon
        return FULL_WAIT_SECS if wait is None else wait

    def _check_idle(self, i: int) -> None:
        """``--until-done`` with a spout task that logged nothing new for ``idle_ms``: it
        never said its input was done (a spout that swallows its own StopIteration), so
        it is taken as ended, with a warning to the driver, instead of a run that never
        ends. As on the local engine, the clock runs only with nothing in flight: a reliable
        spout that ends once its last tuples are acked waits on the engine, not on its input.
        The decision is made while planning: the offsets Spark logs keep it."""
        now = time.monotonic()
        if self.opts.idle_ms <= 0 or self.hosts[i].exhausted or self.unacked[i] or self.replayed[i]:
            self.last_new[i] = now  # tuples in flight: a spout waiting for their acks is not idle
            return
        if (now - self.last_new[i]) * 1000 >= self.opts.idle_ms:
            self.hosts[i].exhausted = True
            self.report.warning(
                f"spout {self.opts.spout} task {i} emitted nothing new for "
                f"{self.opts.idle_ms / 1000:g}s and never signalled end of input: taken as done. "
                "Fix: raise StopIteration from next_tuple when the input is used up (a spout "
                "that catches StopIteration itself never ends); or set -o "
                "stormshift.idle_timeout_secs=N for a slower source.")

    def _ended(self, i: int, seq: int) -> bool:
        """Task i's spout ended and everything it logged is at or below ``seq``."""
        return bool(self.hosts[i].exhausted) and seq >= self.heads[i]

    def _pull(self, i: int, want: int, budget_ms: int, wait_empty: bool) -> int:
        """Run task i's next_tuple() until ``want`` new tuples, ``budget_ms`` or end of input
        (or, unless ``wait_empty``, a call that emits nothing); log them as one chunk. Replays
        of tuples already logged (same msg id and content) are dropped. Returns how many."""
        deadline = time.monotonic() + budget_ms / 1000
        host = self.hosts[i]
        while want > 0 and not host.exhausted:
            entries, msg_ids = self._emits(host, want, deadline, wait_empty)
            if not entries:
                return 0
            entries, msg_ids, keys = self._drop_replays(i, entries, msg_ids)
            if entries:
                self.heads[i] = self.wals[i].append(self.heads[i], entries, keys)
                self.unacked[i].append((self.heads[i], msg_ids))
                self.logged += len(entries)
                self.last_new[i] = time.monotonic()
                faults.hit("source.after_wal_append", resume=lambda: self._restart(i),
                           spout=self.opts.spout, task=i, head=self.heads[i])
                return len(entries)
            if time.monotonic() >= deadline:
                return 0
        return 0

    def _restart(self, i: int) -> None:
        """A fresh instance of spout task i (what a restarted spout process is)."""
        from stormshift.adapters.host import SpoutHost

        host = SpoutHost(self.opts.graph, self.opts.spout, i, colocated=self.colocated)
        host.open()
        self.hosts[i] = host

    def _emits(self, host: Any, want: int, deadline: float,
               wait_empty: bool) -> tuple[list[Any], list[Any]]:
        """Up to ``want`` emits of one spout task as WAL entries, with their msg ids."""
        from stormshift.errors import ComponentFailure, TupleError

        entries: list[tuple[int, list[int], bytes]] = []
        msg_ids: list[Any] = []
        calls = 0
        while len(entries) < want and not host.exhausted:
            try:
                host.next_tuple()
            except ComponentFailure as exc:
                # A bad emit (wrong arity, undeclared stream) is a tuple: dead-lettered.
                # Anything else is reported to the driver; Storm keeps calling next_tuple.
                if isinstance(exc.cause, TupleError):
                    self._reject(host, exc.cause, exc.traceback_text, "emit")
                else:
                    self.report.error(exc)
                host.outbox.errors.clear()
            if host.outbox.logs:
                self.report.logs(host.task_index, host.outbox.logs)
                host.outbox.logs.clear()
            emits = host.outbox.emits
            calls += 1
            if emits:
                for e in emits:
                    try:
                        packed = self.packer.pack(e.values)
                    except (TypeError, ValueError, OverflowError) as err:
                        bad = TupleError(
                            f"an emitted value cannot be encoded ({err}); fix: emit JSON-like "
                            "values (str, int, float, bool, None, bytes, lists, dicts)",
                            component=self.opts.spout, stream=e.stream, values=e.values)
                        bad.msg_id = e.msg_id
                        self._reject(host, bad, "", "encode")
                        continue
                    ids = self.target_ids.get(e.targets)
                    if ids is None:
                        ids = self.target_ids.setdefault(
                            e.targets, [self.first[c] + x for c, x in e.targets])
                    entries.append((self.codes[e.stream], ids, packed))
                    msg_ids.append(e.msg_id)
                emits.clear()
            elif entries or not wait_empty:
                break
            else:
                if time.monotonic() >= deadline:
                    break
                time.sleep(_EMPTY_SLEEP_SECS)
            if calls & 255 == 0 and time.monotonic() >= deadline:
                break
        return entries, msg_ids

    def _reject(self, host: Any, err: Any, trace: str, reason: str) -> None:
        """Dead-letter a spout emit that is no tuple, then ``fail`` its msg id (it can never be
        delivered; a replaying spout may send it again, and it is dead-lettered again)."""
        from stormshift.engines.spark.runtime.worker import redis_for
        from stormshift.state.deadletter import DeadLetters, plain

        self.rejected += 1
        task = host.task_index
        ident = repr(err.msg_id) if err.msg_id is not None else f"at-{self.heads[task]}-{self.rejected}"
        DeadLetters(redis_for(self.opts.redis_url), self.opts.namespace).add(
            self.opts.spout, err.stream, plain(err.values), f"{type(err).__name__}: {err}", trace, -1,
            source=self.opts.spout, tuple_key=f"{self.opts.spout}:{task}:{ident}", task=task,
            reason=reason)
        if err.msg_id is not None:
            from stormshift.errors import ComponentFailure

            try:
                host.fail(err.msg_id)
            except ComponentFailure:
                pass  # counted by the host

    def _msg_key(self, msg_id: Any, entry: tuple[int, list[int], bytes]) -> tuple[bytes, bytes] | None:
        if msg_id is None:
            return None
        try:
            field = self.packer.pack(msg_id)
        except (TypeError, ValueError, OverflowError):
            return None  # an id msgpack cannot encode cannot be recognised on replay
        return field, content_digest(entry[0], entry[2])

    def _drop_replays(self, i: int, entries: list[Any],
                      msg_ids: list[Any]) -> tuple[list[Any], list[Any], list[Any]]:
        """Remove emits the log already holds (their acks wait for the original's batch);
        the kept entries come with their msg ids and msg keys."""
        keys = [self._msg_key(m, e) for m, e in zip(msg_ids, entries)]
        if not any(keys):
            return entries, msg_ids, keys
        logged = self.wals[i].replays(keys)
        if not any(seq is not None for seq in logged) and len(set(keys)) == len(keys):
            return entries, msg_ids, keys  # the usual case: no replay
        here: dict[tuple[bytes, bytes], int] = {}  # replays inside this very pull
        kept_e: list[Any] = []
        kept_m: list[Any] = []
        kept_k: list[Any] = []
        for entry, msg_id, key, seq in zip(entries, msg_ids, keys, logged):
            if seq is None and key is not None:
                seq = here.get(key)
            if seq is not None:
                self.replayed[i].append((seq, msg_id))
                self.dropped_replays += 1
                continue
            if key is not None:
                here[key] = self.heads[i] + len(kept_e)
            kept_e.append(entry)
            kept_m.append(msg_id)
            kept_k.append(key)
        return kept_e, kept_m, kept_k

    def partitions(self, start: dict, end: dict) -> list[WalPartition]:
        # Every task, even one with nothing new: a stage run on the source's partitions
        # (``layout`` doc) must see each of its tasks every batch (ticks, snapshots).
        return [WalPartition(i, s, e) for i, (s, e) in enumerate(zip(start["t"], end["t"]))]

    def commit(self, end: dict) -> None:
        """Tuples below ``end`` are in committed batches: ack them, then trim the log."""
        with self.lock.planner():
            self._commit(end)

    def _commit(self, end: dict) -> None:
        for i, seq in enumerate(end["t"]):
            host, pending = self.hosts[i], self.unacked[i]
            while pending and pending[0][0] <= seq:
                for msg_id in pending.popleft()[1]:
                    if msg_id is not None:
                        host.ack(msg_id)
            if self.replayed[i]:
                waiting = []
                for orig, msg_id in self.replayed[i]:
                    if orig < seq:
                        host.ack(msg_id)  # the original is in a committed batch
                    else:
                        waiting.append((orig, msg_id))
                self.replayed[i] = waiting
            self.wals[i].trim(seq)

    def close(self) -> None:
        if self.pump is not None:
            self.pump.stop()
        for host in self.hosts:
            try:
                host.deactivate()
            except Exception:  # noqa: BLE001, S110 - shutting down; the query already ended
                pass
