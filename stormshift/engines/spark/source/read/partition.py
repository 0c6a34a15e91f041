"""What an executor's read of one input partition sends: beacons, ``READ`` rows or tuples.

``SpoutReader.read`` (``source.py``) runs on a pickled copy of the reader in a
Spark Python worker and calls ``read_partition``: the partition the planner
returned (``options.py``) names a spout task's range (``protocol/spoutrange.py``),
an executor-side spout's chunk is run and logged first (``chunk_read.py``), and
the range's tuples leave as rows (``protocol/rows.py``) for the tasks they were
routed to -- or, for a deferred spout, one ``READ`` row per colocated head.
"""

from __future__ import annotations

from typing import Any

from pyspark.sql.datasource import InputPartition

from stormshift.engines.spark.protocol import rows as R
from stormshift.engines.spark.source.options import (
    ChunkPartition,
    Opts,
    ReplayPartition,
    WalPartition,
)

__all__ = ["read_partition", "spout_range"]


def spout_range(spout: str, partition: InputPartition) -> Any:
    """The ``spoutrange.SpoutRange`` of one of the planner's input partitions."""
    from stormshift.engines.spark.protocol.spoutrange import SpoutRange

    if isinstance(partition, WalPartition):
        return SpoutRange(spout, partition.task, wal=(partition.start, partition.end))
    if isinstance(partition, ReplayPartition):
        return SpoutRange(spout, partition.task, replay=tuple(tuple(r) for r in partition.ranges))
    if isinstance(partition, ChunkPartition):
        if partition.number < 0:
            return SpoutRange(spout, partition.task, wal=(0, 0))  # nothing this batch
        return SpoutRange(spout, partition.task, chunk=partition.number)
    raise TypeError(f"{spout}: unknown input partition {type(partition).__name__}")


def read_partition(opts: Opts, partition: InputPartition) -> Any:
    """The rows of one input partition: the beacons of the heads colocated with the spout,
    then one ``READ`` row per head (a deferred spout) or the range's tuples as ``TUPLE``
    rows for the tasks they were routed to (``spoutrange`` doc)."""
    import msgpack

    from stormshift.engines.spark.protocol.layout import Layout
    from stormshift.engines.spark.protocol.spoutrange import read_range

    rng = spout_range(opts.spout, partition)
    entries = None
    if rng.chunk is not None:  # an executor-side spout: its first read logs the chunk
        from stormshift.engines.spark.source.read.chunk_read import chunk_entries

        assert isinstance(partition, ChunkPartition)
        entries = chunk_entries(opts, rng.task, rng.chunk, partition.limit)
    elif isinstance(partition, ChunkPartition):
        from stormshift.engines.spark.source.read.chunk_read import drain_acks

        drain_acks(opts, rng.task)
    layout = Layout(opts.graph)
    src = opts.graph.component(opts.spout).task_id(rng.task)
    heads = sorted(layout.colocated(opts.spout))
    out = R.RowBuilder()
    for head in heads:
        out.beacon(layout.first_task(head) + rng.task)
    if layout.deferred(opts.spout):
        for head in heads:
            out.read(layout.first_task(head) + rng.task, src, rng.cell(head))
        return out.batches()
    pack = msgpack.Packer(use_bin_type=True).pack
    add = out.add
    for run in read_range(rng, layout, opts.redis_url, opts.namespace, entries):
        seq, code, dests = run.first, run.code, run.dests
        for packed in run.packed_values(pack):
            for dest in dests:
                add(dest, src, seq, code, packed)
            seq += 1
    return out.batches()
