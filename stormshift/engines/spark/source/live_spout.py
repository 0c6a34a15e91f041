"""A generic spout's task run on an executor: the first read of a batch logs its chunk.

Executor mode (``stormshift.spout.executor``, ``chunk_planner.py``): the planner
only numbers chunks; the read of task *i*'s partition for chunk *k*
(``chunk_entries``) runs here, in a Spark Python worker:

1. take a new epoch for the task (a zombie attempt's write is refused);
2. chunk *k* is logged (a retried task, a batch re-run after a crash): re-read it;
3. else bring this worker's live instance of the task to the log's head, ack
   what committed batches hold (the ack mark, ``state/chunks.py``), run
   ``next_tuple`` until the chunk's limit, the spout's end of input or
   ``budget_ms`` of spout time, and log the chunk (first writer wins).

Live instances are kept per (namespace, spout task, topology wiring) in the
process that runs them: by default a spout host that every Python worker of
the executor asks (``spout_host.py``: step 3 runs there, the worker logs the
chunk), else (``stormshift.spout.host`` false) the worker itself. An instance
is *at the head* when it produced (or re-produced) exactly chunks ``0 .. k-1``.
One that is behind -- a fresh process, or one that ran the task's earlier
chunks but not the last ones -- is brought to the head: with the spout's ``resume(last_msg_id)`` hook if
its class defines one, else by running ``next_tuple`` and discarding the emits
while checking them against the logged chunks (same count, same msg ids in the
same order, ``ChunkHead.digest``). A spout that emits anything else is not
deterministic: ``SpoutNotDeterministic`` says so and how to run it instead.
A next_tuple call that emits past the limit keeps the rest for the next chunk
(``carry``), so a chunk never holds more than its limit (``--max-tuples``).
"""

from __future__ import annotations

import collections
import time
from typing import Any

import msgpack

from stormshift.engines.spark import faults
from stormshift.engines.spark.source.live_registry import (
    LIVE,
    SpoutNotDeterministic,
    forget_live_spouts,
    live_key,
)
from stormshift.errors import StormshiftError
from stormshift.state.chunks import ChunkHead, ChunkLog, ids_digest

__all__ = ["HOST_KEY", "LiveSpout", "SpoutNotDeterministic", "chunk_entries", "drain_acks", "emit_chunk",
           "forget_live_spouts", "host_mode", "keep"]

_EMPTY_SLEEP_SECS = 0.001
CATCH_UP_STALL_SECS = 60.0  # a replay that gets no emit for this long is not deterministic
Item = tuple[tuple[int, list[int], bytes], Any]  # (WAL entry, msg id)
HOST_KEY = "stormshift.spout.host"


class LiveSpout:
    """One spout task's instance and where it stands in its chunk log."""

    def __init__(self, host: Any, spout: str, codes: dict[str, int], first: dict[str, int],
                 report: Any, dead_letter: Any):
        self.host, self.spout, self.codes, self.first = host, spout, codes, first
        self.report, self.dead_letter = report, dead_letter
        self.number = 0  # the next chunk this instance produces
        self.seq = 0  # tuples in chunks 0 .. number - 1
        self.carry: list[Item] = []  # emitted past a chunk's limit: the next chunk's first
        self.unacked: collections.deque[tuple[int, list[Any]]] = collections.deque()
        self.pack = msgpack.Packer(use_bin_type=True).pack
        self.targets: dict[Any, list[int]] = {}

    # -- acks ---------------------------------------------------------------
    def drain_acks(self, mark: int) -> None:
        """Ack, in logged order, the msg ids of this instance's chunks below ``mark``."""
        from stormshift.errors import ComponentFailure

        while self.unacked and self.unacked[0][0] < mark:
            for msg_id in self.unacked.popleft()[1]:
                if msg_id is not None:
                    try:
                        self.host.ack(msg_id)
                    except ComponentFailure as exc:
                        self.report.error(exc)

    # -- emits --------------------------------------------------------------
    def _next(self, live: bool) -> list[Item]:
        """The emits of one ``next_tuple`` call as (entry, msg id). ``live``: errors, logs and
        bad emits are reported (a replay only repeats what was reported when they happened)."""
        from stormshift.errors import ComponentFailure, TupleError

        host = self.host
        try:
            host.next_tuple()
        except ComponentFailure as exc:
            if isinstance(exc.cause, TupleError):
                self._reject(exc.cause, exc.traceback_text, "emit", live)
            elif live:
                self.report.error(exc)
            host.outbox.errors.clear()
        if host.outbox.logs:
            if live:
                self.report.logs(host.task_index, host.outbox.logs)
            host.outbox.logs.clear()
        emits = host.outbox.emits
        if not emits:
            return []
        out: list[Item] = []
        for e in emits:
            try:
                packed = self.pack(e.values)
            except (TypeError, ValueError, OverflowError) as err:
                bad = TupleError(f"an emitted value cannot be encoded ({err}); fix: emit JSON-like "
                                 "values (str, int, float, bool, None, bytes, lists, dicts)",
                                 component=self.spout, stream=e.stream, values=e.values)
                bad.msg_id = e.msg_id
                self._reject(bad, "", "encode", live)
                continue
            ids = self.targets.get(e.targets)
            if ids is None:
                ids = self.targets.setdefault(e.targets, [self.first[c] + x for c, x in e.targets])
            out.append(((self.codes[e.stream], ids, packed), e.msg_id))
        emits.clear()
        return out

    def _reject(self, err: Any, trace: str, reason: str, live: bool) -> None:
        """A spout emit that is no tuple: dead-lettered (live only), then ``fail``ed."""
        from stormshift.errors import ComponentFailure

        if live:
            self.dead_letter(err, trace, reason, self.seq)
        if err.msg_id is not None:
            try:
                self.host.fail(err.msg_id)
            except ComponentFailure:
                pass  # counted by the host

    def collect(self, want: int, budget_ms: int) -> tuple[list[Item], bool]:
        """Up to ``want`` items for the next chunk, within ``budget_ms`` of spout time, and
        whether the spout's input ended with them."""
        items, self.carry = self.carry[:want], self.carry[want:]
        deadline = time.monotonic() + budget_ms / 1000
        calls = 0
        while len(items) < want and not self.host.exhausted:
            got = self._next(True)
            calls += 1
            if got:
                items += got
            elif time.monotonic() >= deadline:
                break
            else:
                time.sleep(_EMPTY_SLEEP_SECS)
            if calls & 255 == 0 and time.monotonic() >= deadline:
                break
        if len(items) > want:
            items, self.carry = items[:want], items[want:] + self.carry
        return items, self.host.exhausted and not self.carry

    def advance(self, number: int, msg_ids: list[Any]) -> None:
        self.unacked.append((number, msg_ids))
        self.number, self.seq = number + 1, self.seq + len(msg_ids)

    # -- catching up ----------------------------------------------------------
    def replay(self, number: int, head: ChunkHead) -> None:
        """Re-emit chunk ``number`` (discarding the emits) and check it against its head."""
        items, self.carry = self.carry[:head.tuples], self.carry[head.tuples:]
        stalled = time.monotonic()
        while len(items) < head.tuples and not self.host.exhausted:
            got = self._next(False)
            if got:
                items += got
                stalled = time.monotonic()
            elif time.monotonic() - stalled > CATCH_UP_STALL_SECS:
                break
        if len(items) > head.tuples:
            items, self.carry = items[:head.tuples], items[head.tuples:] + self.carry
        msg_ids = [m for _, m in items]
        if len(items) != head.tuples or ids_digest(msg_ids) != head.digest:
            raise SpoutNotDeterministic(not_deterministic(self.spout, self.host.task_index, number,
                                                          head, msg_ids))
        self.advance(number, msg_ids)


def not_deterministic(spout: str, task: int, number: int, head: ChunkHead, got: list[Any]) -> str:
    what = (f"{len(got)} tuples" if len(got) != head.tuples else
            f"other msg ids (last {got[-1]!r}, logged {head.last_id!r})" if got else "other msg ids")
    return (f"spout {spout!r} task {task} is not deterministic: a fresh instance, run from "
            f"initialize(), re-emitted {what} where its log's chunk {number} holds {head.tuples} "
            f"tuples (msg ids up to {head.last_id!r}), so it cannot take over the task on another "
            "worker. Fix: run it on the planner path (remove stormshift.spout.executor from the "
            "topology or spout config), or define resume(self, last_msg_id) on the spout class: "
            "continue after that msg id (seek a file offset, a consumer position).")


# ----------------------------------------------------------- per worker -----

# the instances live in ``live_registry.LIVE`` (shared with ``spout_host.py``)


def _fresh(opts: Any, task: int, log: ChunkLog) -> LiveSpout:
    from stormshift.adapters.host import SpoutHost
    from stormshift.engines.spark.layout import Layout
    from stormshift.engines.spark.runtime.worker import redis_for
    from stormshift.engines.spark.source.spout_report import SpoutReport

    layout = Layout(opts.graph)
    comp = opts.graph.component(opts.spout)
    host = SpoutHost(opts.graph, opts.spout, task, colocated=layout.colocated(opts.spout))
    host.open()
    codes = {s: layout.stream_code[(opts.spout, s)] for s in comp.outputs}
    first = {c.name: c.first_task_id for c in opts.graph}
    report = SpoutReport(redis_for(opts.redis_url), opts.namespace, opts.spout,
                         opts.graph.config)
    return LiveSpout(host, opts.spout, codes, first, report, _dead_letterer(opts, task))


def _dead_letterer(opts: Any, task: int) -> Any:
    def dead_letter(err: Any, trace: str, reason: str, seq: int) -> None:
        from stormshift.engines.spark.runtime.worker import redis_for
        from stormshift.engines.spark.task.poison import plain
        from stormshift.state.deadletter import DeadLetters

        ident = repr(err.msg_id) if err.msg_id is not None else f"at-{seq}"
        DeadLetters(redis_for(opts.redis_url), opts.namespace).add(
            opts.spout, err.stream, plain(err.values), f"{type(err).__name__}: {err}", trace, -1,
            source=opts.spout, tuple_key=f"{opts.spout}:{task}:{ident}", task=task, reason=reason)
    return dead_letter


def _at_head(opts: Any, task: int, number: int, log: ChunkLog) -> LiveSpout:
    """This worker's instance of the task, brought to chunk ``number`` (module doc)."""
    key = live_key(opts, task)
    live = LIVE.pop(key, None)
    stats: dict[str, int] = {}
    if live is None or live.number > number:
        live = _fresh(opts, task, log)
        stats["fresh"] = 1
        if live.host.capabilities.has("resume") and number > 0:
            _resume(live, live.host.instance.resume, number, log)
            stats["resumed"] = 1
    if live.number < number:
        seq = live.seq
        todo = list(range(live.number, number))
        for n, head in zip(todo, log.heads(todo)):
            if head is None:
                raise SpoutNotDeterministic(f"spout {opts.spout!r} task {task}: chunk {n} is not "
                                            "logged; cannot bring an instance to the log's head")
            live.replay(n, head)
        stats["replayed"] = live.seq - seq
    if stats:
        log.count(**stats)
    LIVE[key] = live
    return live


def _resume(live: LiveSpout, resume: Any, number: int, log: ChunkLog) -> None:
    """A spout with a ``resume(last_msg_id)`` hook seeks past the last logged tuple; the msg
    ids of logged chunks not yet acked become its unacked ones (their acks come to it)."""
    heads = log.heads(list(range(number)))
    last = next((h.last_id for h in reversed(heads) if h is not None and h.tuples), None)
    resume(last)
    acked = log.acked()
    waiting = list(range(acked, number))
    for n, got in zip(waiting, log.payloads(waiting)):
        if got is not None:
            live.unacked.append((n, got[1]))
    end = next((h.end for h in reversed(heads) if h is not None), 0)
    live.number, live.seq = number, end


def chunk_entries(opts: Any, task: int, number: int, limit: int) -> list[Any]:
    """The entries of chunk ``number`` of spout task ``task``: logged by this read if it is
    the first, else re-read (module doc). With a spout host (``host_client.py`` /
    ``spout_host.py``, the default) the live instance lives there, else in this worker."""
    from stormshift.engines.spark.runtime.worker import redis_for

    log = ChunkLog(redis_for(opts.redis_url), opts.namespace, opts.spout, task)
    log.take_epoch()
    got = log.payload(number)
    if got is not None:
        return got[0]
    if host_mode(opts):
        from stormshift.engines.spark.source.host_client import chunk_from_host

        entries = chunk_from_host(opts, task, number, limit, log)
    else:
        entries = _chunk_here(opts, task, number, limit, log)
    faults.hit("source.after_chunk_log", spout=opts.spout, task=task, chunk=number)
    return entries


def emit_chunk(opts: Any, task: int, number: int, limit: int, acked: int,
               log: ChunkLog) -> tuple[LiveSpout, list[Any], list[Any], ChunkHead]:
    """Chunk ``number``'s emits by this process's live instance of the task, brought to the
    log's head and given the acks below ``acked`` first. The instance stays out of the
    cache until the caller knows the chunk is logged as it emitted it (``keep``)."""
    live = _at_head(opts, task, number, log)
    LIVE.pop(live_key(opts, task), None)
    live.drain_acks(acked)
    items, ended = live.collect(limit, opts.budget_ms)
    entries, msg_ids = [e for e, _ in items], [m for _, m in items]
    head = ChunkHead(live.seq, len(items), ended, ids_digest(msg_ids), msg_ids[-1] if msg_ids else None)
    return live, entries, msg_ids, head


def keep(opts: Any, task: int, live: LiveSpout, number: int, msg_ids: list[Any]) -> None:
    """Chunk ``number`` (these msg ids) is logged as ``live`` emitted it: the instance is at
    the log's head again and goes back to the cache."""
    live.advance(number, msg_ids)
    LIVE[live_key(opts, task)] = live


def _chunk_here(opts: Any, task: int, number: int, limit: int, log: ChunkLog) -> list[Any]:
    live, entries, msg_ids, head = emit_chunk(opts, task, number, limit, log.acked(), log)
    # an instance whose emits did not reach the log (another attempt logged the chunk
    # first, or the put raised) is off the log: it stays out of the cache
    if not log.put(number, head, entries, msg_ids):
        got = log.payload(number)
        if got is None:
            raise StormshiftError(f"spout {opts.spout!r} task {task}: chunk {number} vanished")
        return got[0]
    keep(opts, task, live, number, msg_ids)
    return entries


def host_mode(opts: Any) -> bool:
    """Whether the task's live instance runs in a spout host process (``spout_host.py``):
    ``stormshift.spout.host``, the spout's config else the topology's (default yes); not
    for options built in-process (no string form to send the host)."""
    if not getattr(opts, "raw", None):
        return False
    comp = opts.graph.component(opts.spout)
    value = comp.config.get(HOST_KEY, opts.graph.config.get(HOST_KEY, True))
    return value is True or str(value).lower() in ("true", "1", "yes")


def drain_acks(opts: Any, task: int) -> None:
    """A read with no chunk (the task ended, or the batch that ends the run): the task's
    instance on this worker, if any, still gets the acks of committed chunks."""
    if host_mode(opts):
        from stormshift.engines.spark.source.host_client import acks_to_host

        acks_to_host(opts, task)
        return
    live = LIVE.get(live_key(opts, task))
    if live is not None and live.unacked:
        from stormshift.engines.spark.runtime.worker import redis_for

        live.drain_acks(ChunkLog(redis_for(opts.redis_url), opts.namespace, opts.spout, task).acked())
