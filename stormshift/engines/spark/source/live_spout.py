"""An executor-side spout task's live instance: built, brought to its log's head, emitting a chunk.

Shared by the two processes that keep live instances (``live_registry.py``): a
Spark Python worker (the read, ``read/chunk_read.py``, with ``stormshift.spout.host``
false) and a spout host (``spouthost/spout_host.py``, the default). Both call
``emit_chunk`` for chunk *k* and, once the chunk is logged as it was emitted,
``keep``.

An instance is *at the head* when it produced (or re-produced) exactly chunks
``0 .. k-1``. One that is behind -- a fresh process, or one that ran the task's
earlier chunks but not the last ones -- is brought to the head: with the spout's
``resume(last_msg_id)`` hook if its class defines one, else by running
``next_tuple`` and discarding the emits while checking them against the logged
chunks (same count, same msg ids in the same order, ``ChunkHead.digest``). A
spout that emits anything else is not deterministic: ``SpoutNotDeterministic``
says so and how to run it instead. Before a chunk it gets the acks of what
committed batches hold (the ack mark, ``engines/spark/records/chunks.py``). A
next_tuple call that emits past the limit keeps the rest for the next chunk
(``carry``), so a chunk never holds more than its limit (``--max-tuples``).
"""

from __future__ import annotations

import collections
import time
from typing import Any

import msgpack

from stormshift.engines.spark.records.chunks import ChunkHead, ChunkLog, ids_digest
from stormshift.engines.spark.source.live_registry import (
    LIVE,
    SpoutNotDeterministic,
    forget_live_spouts,
    live_key,
)

__all__ = ["LiveSpout", "SpoutNotDeterministic", "emit_chunk", "forget_live_spouts", "keep"]

_EMPTY_SLEEP_SECS = 0.001
CATCH_UP_STALL_SECS = 60.0  # a replay that gets no emit for this long is not deterministic
Item = tuple[tuple[int, list[int], bytes], Any]  # (WAL entry, msg id)


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


# ------------------------------------------------ per process (worker or host) -----

# the instances live in ``live_registry.LIVE``


def _fresh(opts: Any, task: int, log: ChunkLog) -> LiveSpout:
    from stormshift.adapters.host import SpoutHost
    from stormshift.engines.spark.protocol.layout import Layout
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
        from stormshift.state.deadletter import DeadLetters, plain

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
