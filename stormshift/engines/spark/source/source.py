"""Spouts as PySpark Python streaming data sources (one source per spout).

Where each method runs (pyspark 4.3, ``python_streaming_source_runner``):
``initialOffset``/``latestOffset``/``partitions``/``commit``/``stop`` run in
ONE long-lived planning Python process per source, across batches, so the
spout instances live there; ``read`` runs in executors, from a pickled copy
of the reader, and must only use its options and the partition.

Offsets (JSON): ``t`` (generic spouts: logged seq per task) or ``p``
(replayable spouts: offset per source partition), ``done`` (all input is in
batches up to this offset), ``fin`` (an empty batch at or after ``done``:
planning it makes Spark commit -- and so ack -- the last data batch; the
engine stops once every source reports ``fin``; when end of input is found
with nothing new to read, that empty batch is ``done`` and ``fin`` at once),
``k`` (tick clock: changes every tick interval so batches run for tick tuples
even without new input), ``n`` (spout tuples per task in batches up to this
offset: the durable count ``--max-tuples`` is checked against,
``stormshift.engines.budget``) and ``capped`` (``done`` because the count
reached the budget, not end of input: a later run with a larger budget, from
the same checkpoint, goes on from here).

Generic spouts: ``latestOffset`` runs ``next_tuple()`` up to ``batch_max``
tuples per task, cut at the task's ``--max-tuples`` target (or until ``budget_ms``), appends the emits to the
write-ahead log (``stormshift.state.wal``) and only then returns the offset.
``commit(end)`` acks the tuples of committed batches, then trims the log.
Replayable spouts (``stormshift.spouts.base``) are read through their replay
interface and need no log. When every consumer of the spout runs on the
source's partitions, ``read`` sends only beacons and one read row per head:
the heads' stages read the ranges themselves (``spoutread``).
"""

from __future__ import annotations

from typing import Any

from pyspark.sql.datasource import DataSource, DataSourceStreamReader, InputPartition

from stormshift.engines.spark import rows as R
from stormshift.engines.spark.layout import ROW_SCHEMA_DDL
from stormshift.engines.spark.source.options import Opts, ReplayPartition, WalPartition

__all__ = ["SOURCE_NAME", "SpoutSource"]

SOURCE_NAME = "stormshift_spout"


class SpoutSource(DataSource):
    @classmethod
    def name(cls) -> str:
        return SOURCE_NAME

    def schema(self) -> str:
        return ROW_SCHEMA_DDL

    def streamReader(self, schema: Any) -> DataSourceStreamReader:
        return SpoutReader(dict(self.options))


class SpoutReader(DataSourceStreamReader):
    def __init__(self, options: dict[str, str]):
        self.options = options
        self._planner: Any = None

    def _plan(self) -> Any:
        if self._planner is None:
            from stormshift.engines.spark.source.planner import make_planner

            self._planner = make_planner(Opts.parse(self.options))
        return self._planner

    def initialOffset(self) -> dict:
        return self._plan().initial_offset()

    def latestOffset(self, start: dict, limit: Any) -> dict:
        if self._stopping():  # the driver is stopping the query: no new batch (engine._stop)
            return start
        return self._plan().latest_offset(start)

    def _stopping(self) -> bool:
        from stormshift.engines.spark.runtime.worker import redis_for
        from stormshift.state.runrecords import stop_requested

        opts = Opts.parse(self.options)
        return stop_requested(redis_for(opts.redis_url), opts.namespace)

    def partitions(self, start: dict, end: dict) -> list[InputPartition]:
        return self._plan().partitions(start, end)

    def commit(self, end: dict) -> None:
        self._plan().commit(end)

    def stop(self) -> None:
        if self._planner is not None:
            self._planner.close()

    def read(self, partition: InputPartition) -> Any:
        opts = Opts.parse(self.options)
        from stormshift.engines.spark.runtime.worker import ensure_paths

        ensure_paths(opts.graph)
        from stormshift.engines.spark.profiling import profiled

        if isinstance(partition, WalPartition):
            rows = _read_wal(opts, partition)
        elif isinstance(partition, ReplayPartition):
            rows = _read_replay(opts, partition)
        else:  # pragma: no cover - partitions() makes only these two
            raise TypeError(f"{opts.spout}: unknown input partition {type(partition).__name__}")
        yield from profiled(f"source-{opts.spout}", rows)


def _local_rows(layout: Any, task: int) -> tuple[R.RowBuilder, dict[int, int]]:
    """A row builder holding the beacons of the heads that run on this partition, and
    the dest remapping that sends this spout task's tuples to them (``layout`` doc)."""
    out = R.RowBuilder()
    for head in sorted(layout.direct_heads):
        out.beacon(layout.first_task(head) + task)
    return out, layout.local_dests(task)


def _read_rows(layout: Any, opts: Opts, task: int, kind: str, **where: Any) -> Any:
    """Beacons and one read row per head: those heads read the range themselves
    (``spoutread`` doc). Seq 0: redriven rows of this source task sort after it."""
    from stormshift.engines.spark.source.spoutread import READ_SID, read_row

    out, _ = _local_rows(layout, task)
    src = opts.graph.component(opts.spout).task_id(task)
    for head in sorted(layout.direct_heads):
        out.add(layout.first_task(head) + task, src, 0, READ_SID,
                read_row(kind, opts.spout, task, head, **where))
    return out.batches()


def _read_wal(opts: Opts, part: WalPartition) -> Any:
    from stormshift.engines.spark.layout import Layout
    from stormshift.engines.spark.source.spoutread import deferred, wal_entries

    layout = Layout(opts.graph)
    if deferred(layout, opts.spout):
        yield from _read_rows(layout, opts, part.task, "wal", start=part.start, end=part.end)
        return
    src = opts.graph.component(opts.spout).task_id(part.task)
    out, local = _local_rows(layout, part.task)
    entries = wal_entries(opts.redis_url, opts.namespace, opts.spout, part.task, part.start, part.end)
    for seq, (code, targets, packed) in enumerate(entries):
        for dest in targets:
            out.add(local.get(dest, dest), src, seq, code, packed)
    yield from out.batches()


def _read_replay(opts: Opts, part: ReplayPartition) -> Any:
    import msgpack

    from stormshift.engines.spark.layout import Layout
    from stormshift.engines.spark.source.spoutread import deferred, replay_chunks, replay_host

    layout = Layout(opts.graph)
    if deferred(layout, opts.spout):
        ranges = [list(r) for r in part.ranges]
        yield from _read_rows(layout, opts, part.task, "replay", ranges=ranges)
        return
    comp = opts.graph.component(opts.spout)
    route = replay_host(opts.graph, opts.namespace, opts.spout, part.task).router.route
    src = comp.task_id(part.task)
    code = layout.stream_code[(opts.spout, "default")]
    first = {c.name: c.first_task_id for c in opts.graph}
    packer = msgpack.Packer(use_bin_type=True)
    out, local = _local_rows(layout, part.task)
    chunks = replay_chunks(opts.graph, opts.redis_url, opts.namespace, opts.spout, part.task,
                           part.ranges)
    seq = 0
    for chunk in chunks:
        for values in chunk:
            packed = packer.pack(values)
            for consumer, index in route("default", values):
                dest = first[consumer] + index
                out.add(local.get(dest, dest), src, seq, code, packed)
            seq += 1
    yield from out.batches()

