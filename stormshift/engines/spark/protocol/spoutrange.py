"""The one reader of a spout task's input for one batch: its *range*, as runs of tuples.

A range is what Spark's offset log holds for one spout task and batch: the
write-ahead log's seqs ``[start, end)`` (a generic spout) or ``(partition,
start, end]`` triples (a replayable spout). ``read_range`` turns either into
``Run``s: consecutive tuples with one stream code and one set of destination
tasks, as routed when the spout emitted them (the WAL holds the planner's
routing) or now by the spout task's router (replay) -- both built with the
plan's colocated heads (``Layout.colocated``), so nothing is remapped after.

Two places read ranges, both through ``read_range``:

- the source's ``read`` (``source/source.py``), which sends the runs' tuples
  as ``TUPLE`` rows (``rows.py``): the general case;
- the head of a stage that runs on the spout's partitions, when the spout is
  ``Layout.deferred``: the source then sends it a ``READ`` row holding the
  range (``SpoutRange.cell``) and the head's task reads the range itself
  (``task/headinput.py``): the tuples never cross into the JVM and back.

The range is what Spark's offset log holds, so a re-run reads the same
tuples in the same order. A tuple's seq is the same on both paths: its index
in the range (WAL: among all logged entries of the range; replay: among good
records).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any, NamedTuple

import msgpack

from stormshift.engines.spark.protocol import rows as R
from stormshift.topology.graph import TopologyGraph

__all__ = ["Run", "SpoutRange", "read_range", "rechunk", "replay_chunks", "replay_host"]


@dataclass(frozen=True)
class SpoutRange:
    """Spout task ``task``'s input of one batch: ``wal = (start, end)`` or ``replay`` ranges."""

    spout: str
    task: int
    wal: tuple[int, int] | None = None
    replay: tuple[tuple[str, Any, Any], ...] = ()
    chunk: int | None = None  # an executor-side spout's chunk number (``engines/spark/records/chunks.py``)

    def cell(self, head: str) -> bytes:
        """``v`` of the ``READ`` row for ``head``'s task: a chunk of one item, the range
        (offsets come from Spark's JSON offset log: msgpack takes them)."""
        where: dict[str, Any] = (
            {"chunk": self.chunk} if self.chunk is not None else
            {"wal": list(self.wal)} if self.wal is not None else
            {"replay": [list(r) for r in self.replay]})
        return R.chunk_of([{"spout": self.spout, "task": self.task, "head": head, **where}])

    @classmethod
    def from_item(cls, item: dict[str, Any]) -> tuple[SpoutRange, str]:
        """``(range, head)`` of a decoded ``READ`` row's item."""
        wal = item.get("wal")
        return cls(item["spout"], item["task"], None if wal is None else (wal[0], wal[1]),
                   tuple(tuple(r) for r in item.get("replay", ())),  # type: ignore[misc]
                   item.get("chunk")), item["head"]


class Run(NamedTuple):
    """Consecutive tuples of a range with one stream code and one set of destinations."""

    first: int  # seq of the first tuple (its index in the range)
    code: int  # stream code (``Layout.streams``)
    dests: tuple[int, ...]  # global task ids the tuples were routed to
    items: list[Any]  # packed values (bytes) if ``packed``, else value lists
    packed: bool

    def values(self) -> list[Any]:
        if not self.packed:
            return self.items
        unpackb = msgpack.unpackb
        return [unpackb(p, raw=False, strict_map_key=False) for p in self.items]

    def packed_values(self, pack: Any) -> list[bytes]:
        return self.items if self.packed else [pack(v) for v in self.items]


def read_range(rng: SpoutRange, layout: Any, redis_url: str, namespace: str,
               entries: Iterable[Any] | None = None) -> Iterator[Run]:
    """The runs of ``rng``, in order (module doc); ``entries``: a chunk's, already at hand."""
    if rng.chunk is not None:
        return _entry_runs(entries if entries is not None else _chunk(rng, redis_url, namespace))
    if rng.wal is not None:
        return _wal_runs(rng, redis_url, namespace)
    return _replay_runs(rng, layout, redis_url, namespace)


def _chunk(rng: SpoutRange, redis_url: str, namespace: str) -> list[Any]:
    from stormshift.engines.spark.records.chunks import ChunkLog
    from stormshift.engines.spark.runtime.worker import redis_for
    from stormshift.errors import StateError

    assert rng.chunk is not None
    got = ChunkLog(redis_for(redis_url), namespace, rng.spout, rng.task).payload(rng.chunk)
    if got is None:
        raise StateError(f"spout {rng.spout!r} task {rng.task}: chunk {rng.chunk} is not logged "
                         "(its batch committed and it was trimmed, or its log was deleted)")
    return got[0]


def _wal_runs(rng: SpoutRange, redis_url: str, namespace: str) -> Iterator[Run]:
    from stormshift.engines.spark.records.wal import WriteAheadLog
    from stormshift.engines.spark.runtime.worker import redis_for

    assert rng.wal is not None
    start, end = rng.wal
    return _entry_runs(WriteAheadLog(redis_for(redis_url), namespace, rng.spout, rng.task).read(start, end))


def _entry_runs(entries: Iterable[Any]) -> Iterator[Run]:
    """Logged entries ``[code, targets, packed]`` as runs."""
    run: list[bytes] = []
    run_code, run_targets, first = -1, None, 0
    size = R.CHUNK_TUPLES
    for seq, (code, targets, packed) in enumerate(entries):
        if code != run_code or targets != run_targets or len(run) >= size:
            if run:
                yield Run(first, run_code, tuple(run_targets or ()), run, True)
            run, run_code, run_targets, first = [], code, targets, seq
        run.append(packed)
    if run:
        yield Run(first, run_code, tuple(run_targets or ()), run, True)


def _replay_runs(rng: SpoutRange, layout: Any, redis_url: str, namespace: str) -> Iterator[Run]:
    graph = layout.graph
    host = replay_host(graph, namespace, rng.spout, rng.task, layout.colocated(rng.spout))
    code = layout.stream_code[(rng.spout, "default")]
    first = {c.name: c.first_task_id for c in graph}
    chunks = replay_chunks(host, redis_url, namespace, rng.spout, rng.task, rng.replay)
    seq = 0
    constant = host.router.constant.get("default")
    if constant is not None:  # every tuple goes to the same tasks: no routing per tuple
        dests = tuple(first[c] + i for c, i in constant)
        for chunk in chunks:
            yield Run(seq, code, dests, chunk, False)
            seq += len(chunk)
        return
    route = host.router.route
    for chunk in chunks:
        run: list[Any] = []
        run_dests: tuple[int, ...] = ()
        for values in chunk:
            dests = tuple(first[c] + i for c, i in route("default", values))
            if dests != run_dests and run:
                yield Run(seq, code, run_dests, run, False)
                seq += len(run)
                run = []
            run_dests = dests
            run.append(values)
        if run:
            yield Run(seq, code, run_dests, run, False)
            seq += len(run)


_REPLAY_HOSTS: dict[tuple[Any, ...], Any] = {}


def replay_host(graph: TopologyGraph, namespace: str, spout: str, task: int,
                colocated: frozenset[str] = frozenset()) -> Any:
    """One live spout per task, configuration and wiring: a worker that outlives a run (a
    shared session) must not read another topology's files with this one's offsets, nor
    route with a router built for another par (a rescaled run)."""
    comp = graph.component(spout)
    key = (namespace, spout, task, comp.class_path, tuple(sorted(colocated)),
           repr(sorted(graph.config.items())), repr(sorted(comp.config.items())), graph.wiring())
    host = _REPLAY_HOSTS.get(key)
    if host is None:
        from stormshift.adapters.host import SpoutHost

        host = _REPLAY_HOSTS[key] = SpoutHost(graph, spout, task, colocated=colocated)
        host.open()
    return host


def replay_chunks(host: Any, redis_url: str, namespace: str, spout: str, task: int,
                  ranges: Iterable[tuple[str, Any, Any]],
                  size: int = R.CHUNK_TUPLES) -> Iterator[list[list[Any]]]:
    """The values of every good record of ``ranges`` (``(partition, start, end]`` each) of
    ``host``'s spout, in order, in lists of up to ``size``; a record that is no tuple is
    dead-lettered at the spout (reason ``decode`` or ``value``: ``spouts/values.py``)."""
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
            reason=getattr(err, "kind", "decode"))

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
