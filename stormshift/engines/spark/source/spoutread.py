"""Reading one spout task's tuples of one batch: its write-ahead log range or its replay ranges.

Two places read them (``layout`` doc, "head on the source's partitions"):

- the source's ``read`` (``source.py``), which turns them into rows for
  Spark: the general case;
- the stage of a head that reads the spout locally, when every consumer of
  every stream of the spout is such a head (``deferred``). The source then
  sends, per head task, its beacon and one *read row* (``sid = READ_SID``,
  ``v`` = a chunk of one item: the range, a msgpack map) instead of the
  tuples, and the head's stage reads the range itself (``HeadInput``): the
  tuples never cross into the JVM and back, nor are they packed and unpacked
  on the way. The range is what Spark's offset log holds, so a re-run reads
  the same tuples in the same order, as before.

Seqs are the same in both places: the index of a tuple in the task's range
(WAL: among all logged entries of the range; replay: among good records).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

import msgpack
import pyarrow as pa

from stormshift.engines.spark import rows as R
from stormshift.state.wal import Entry

__all__ = ["READ_SID", "HeadInput", "deferred", "read_row", "rechunk", "replay_chunks", "replay_host",
           "wal_entries"]

READ_SID = -2
"""``sid`` of a read row: its ``v`` is a range to read, not a chunk of tuples."""


def deferred(layout: Any, spout: str) -> bool:
    """Whether every consumer of every stream of ``spout`` is a head run on its partitions,
    so those heads read the spout's ranges themselves (module doc)."""
    graph = layout.graph
    subs = [s for stream in graph.component(spout).outputs for s in graph.subscriptions(spout, stream)]
    return bool(subs) and all(s.consumer in layout.direct_heads for s in subs)


def read_row(kind: str, spout: str, task: int, head: str, **where: Any) -> bytes:
    """``v`` of a read row for a task of ``head``: ``{"kind": "wal"|"replay", "spout", "task",
    "head", ...range}`` (offsets come from Spark's JSON offset log: msgpack takes them)."""
    return msgpack.packb({"kind": kind, "spout": spout, "task": task, "head": head, **where},
                         use_bin_type=True)


# -- the two kinds of ranges ---------------------------------------------------
def wal_entries(redis_url: str, namespace: str, spout: str, task: int,
                start: int, end: int) -> Iterator[Entry]:
    """``(stream code, target task ids, packed values)`` of log seqs ``start <= seq < end``."""
    from stormshift.engines.spark.runtime.worker import redis_for
    from stormshift.state.wal import WriteAheadLog

    return WriteAheadLog(redis_for(redis_url), namespace, spout, task).read(start, end)


_REPLAY_HOSTS: dict[tuple[Any, ...], Any] = {}


def replay_host(graph: Any, namespace: str, spout: str, task: int) -> Any:
    """One live spout per task and configuration: a worker that outlives a run (a shared
    session) must not read another topology's files with this one's offsets."""
    comp = graph.component(spout)
    key = (namespace, spout, task, comp.class_path,
           repr(sorted(graph.config.items())), repr(sorted(comp.config.items())))
    host = _REPLAY_HOSTS.get(key)
    if host is None:
        from stormshift.adapters.host import SpoutHost

        host = _REPLAY_HOSTS[key] = SpoutHost(graph, spout, task)
        host.open()
    return host


def replay_chunks(graph: Any, redis_url: str, namespace: str, spout: str, task: int,
                  ranges: Iterable[tuple[str, Any, Any]],
                  size: int = R.CHUNK_TUPLES) -> Iterator[list[list[Any]]]:
    """The values of every good record of ``ranges`` (``(partition, start, end]`` each), in
    order, in lists of up to ``size``; a record that is no tuple is dead-lettered (reason
    ``decode``)."""
    host = replay_host(graph, namespace, spout, task)
    host.router.reset_seq()

    def dead_letter(err: Any) -> None:
        # The source's reader knows no txid (Spark numbers batches apart from their ranges),
        # so the entry says txid -1 on both paths; its identity is its place in the source,
        # ``partition:offset``,
        # the same on every re-read of the range: a replayed batch adds nothing, two equal
        # bad records stay two entries. Not redrivable (no bolt failed it): fix the source
        # data and append it again.
        from stormshift.engines.spark.runtime.worker import redis_for
        from stormshift.spouts.base import msg_id_for
        from stormshift.state.deadletter import DeadLetters

        DeadLetters(redis_for(redis_url), namespace).add(
            spout, "default", err.values, f"{type(err).__name__}: {err}", "", -1,
            source=spout, tuple_key=msg_id_for(err.partition, err.offset), task=task,
            reason="decode")

    reader = host.instance
    yield from rechunk((block for pname, start, end in ranges
                        for block in reader.replay_values(pname, start, end, dead_letter)), size)


def rechunk(blocks: Iterable[list[Any]], size: int) -> Iterator[list[Any]]:
    """The items of ``blocks``, in order, in lists of ``size`` (the last may be shorter)."""
    chunk: list[Any] = []
    for block in blocks:
        if chunk:  # top up what the last block left first
            room = size - len(chunk)
            chunk.extend(block[:room])
            if len(chunk) < size:
                continue
            yield chunk
            block = block[room:]
        full = len(block) - len(block) % size
        for at in range(0, full, size):
            yield block[at:at + size]
        chunk = block[full:]
    if chunk:
        yield chunk


# -- a head's input ---------------------------------------------------------------
class HeadInput:
    """A stage head's input chunks ``(src, sid, value lists)``: the partition's rows in
    order, each read row replaced by the tuples of its range. ``maxseq`` (highest seq
    per source task, for the driver's spout counts) is complete once iterated."""

    def __init__(self, table: pa.Table, layout: Any, redis_url: str, namespace: str):
        self.table, self.layout = table, layout
        self.redis_url, self.namespace = redis_url, namespace
        self.maxseq: dict[int, int] = {}

    def __iter__(self) -> Iterator[tuple[int, int, list[Any]]]:
        table = self.table
        if table.num_rows == 0:
            return
        sids = table.column("sid").to_numpy()
        if not (sids == READ_SID).any():
            self.maxseq = R.max_seq_by_src(table)
            yield from R.iter_chunks(table)
            return
        self.maxseq = {}
        srcs = table.column("src").to_numpy().tolist()
        seqs = table.column("seq").to_numpy().tolist()
        cells = R.iter_values(table.column("v"))
        for src, seq, sid, cell in zip(srcs, seqs, sids.tolist(), cells):
            if sid == READ_SID:  # a chunk of one: the range (``read_row``)
                yield from self._read(src, cell[0])
            else:
                if seq < R.REDRIVE_SEQ_BASE and seq > self.maxseq.get(src, -1):
                    self.maxseq[src] = seq
                yield src, sid, cell

    def _read(self, src: int, spec: dict[str, Any]) -> Iterator[tuple[int, int, list[Any]]]:
        layout, spout, task = self.layout, spec["spout"], spec["task"]
        n = 0
        if spec["kind"] == "replay":
            code = layout.stream_code[(spout, "default")]
            for chunk in replay_chunks(layout.graph, self.redis_url, self.namespace, spout, task,
                                       [tuple(r) for r in spec["ranges"]]):
                n += len(chunk)
                yield src, code, chunk
        else:
            mine = _tasks_of(layout, spec["head"])
            unpackb = msgpack.unpackb
            run: list[Any] = []
            run_code = -1
            for code, targets, packed in wal_entries(self.redis_url, self.namespace, spout, task,
                                                     spec["start"], spec["end"]):
                n += 1
                if mine.isdisjoint(targets):
                    continue  # logged for another head
                if code != run_code or len(run) >= R.CHUNK_TUPLES:
                    if run:
                        yield src, run_code, run
                    run, run_code = [], code
                run.append(unpackb(packed, raw=False, strict_map_key=False))
            if run:
                yield src, run_code, run
        if n:
            self.maxseq[src] = max(self.maxseq.get(src, -1), n - 1)


def _tasks_of(layout: Any, head: str) -> frozenset[int]:
    """Global task ids the planner may have routed a spout tuple to for ``head``."""
    first = layout.first_task(head)
    return frozenset(range(first, first + layout.graph.component(head).par))
