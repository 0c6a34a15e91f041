"""A stage head's input: its partition's rows as chunks, ``READ`` rows read here.

The head's partition (``rows.sorted_table`` order, beacons split off) holds
``TUPLE`` and ``REDRIVEN`` rows, and, when its spout is ``Layout.deferred``,
one ``READ`` row per spout task naming a range the head reads itself through
the one spout-range reader (``spoutrange.read_range``), keeping the tuples
routed to its own tasks.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pyarrow as pa

from stormshift.engines.spark.protocol import rows as R
from stormshift.engines.spark.protocol.spoutrange import SpoutRange, read_range

__all__ = ["HeadInput"]

_READ = int(R.Kind.READ)
_TUPLE = int(R.Kind.TUPLE)


class HeadInput:
    """A stage head's input chunks ``(src, sid, value lists)`` (or a raw cell for the kernel
    to decode: ``rows.iter_input``): the partition's rows in order, each ``READ`` row replaced
    by the tuples of its range. ``maxseq`` (highest emit seq per source task, for the
    driver's spout counts) is complete once iterated."""

    def __init__(self, table: pa.Table, layout: Any, redis_url: str, namespace: str):
        self.table, self.layout = table, layout
        self.redis_url, self.namespace = redis_url, namespace
        self.maxseq: dict[int, int] = {}

    def __iter__(self) -> Iterator[tuple[int, int, list[Any]]]:
        table = self.table
        if table.num_rows == 0:
            return
        kinds = table.column("kind").to_numpy()
        if not (kinds == _READ).any():
            self.maxseq = R.max_seq_by_src(table)
            yield from R.iter_input(table)
            return
        self.maxseq = {}
        srcs = table.column("src").to_numpy().tolist()
        seqs = table.column("seq").to_numpy().tolist()
        sids = table.column("sid").to_numpy().tolist()
        cells = R.iter_cells(table.column("v")) if R.RAW_CELLS else R.iter_values(table.column("v"))
        for src, kind, seq, sid, cell in zip(srcs, kinds.tolist(), seqs, sids, cells):
            if kind == _READ:  # a chunk of one: the range (``SpoutRange.cell``)
                yield from self._read(src, *SpoutRange.from_item(R.decoded(cell)[0]))
            else:
                if kind == _TUPLE and seq > self.maxseq.get(src, -1):
                    self.maxseq[src] = seq
                yield src, sid, cell

    def _read(self, src: int, rng: SpoutRange, head: str) -> Iterator[tuple[int, int, list[Any]]]:
        first = self.layout.first_task(head)
        mine = frozenset(range(first, first + self.layout.graph.component(head).par))
        last = -1
        for run in read_range(rng, self.layout, self.redis_url, self.namespace):
            last = run.first + len(run.items) - 1
            if mine.isdisjoint(run.dests):
                continue  # routed to another head only
            yield src, run.code, run.values()
        if last >= 0:
            self.maxseq[src] = max(self.maxseq.get(src, -1), last)
