"""Arrow in, Arrow out: the row format between stages (see ``layout.ROW_SCHEMA_DDL``).

Values are decoded in bulk: a partition's ``v`` column is one contiguous
buffer of msgpack objects, fed to ONE ``Unpacker`` (no per-row Python call
besides the iteration itself). Output rows are gathered in plain lists and
turned into record batches at the end of the task.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

import msgpack
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

__all__ = ["SCHEMA", "RowBuilder", "iter_rows", "iter_values", "max_seq_by_src", "sorted_table"]

SCHEMA = pa.schema(
    [("dest", pa.int32()), ("src", pa.int32()), ("seq", pa.int64()), ("sid", pa.int32()),
     ("v", pa.binary())]
)
OUT_ROWS_PER_BATCH = 1 << 17
# Redriven dead letters (``redrive.py``) carry seqs from here up: they sort after
# every real emit of their source task, and are no spout emits.
REDRIVE_SEQ_BASE = 1 << 40


def sorted_table(batches: Iterable[pa.RecordBatch]) -> pa.Table:
    """All rows of a partition, ordered by (src, seq) -- deterministic whatever the shuffle did."""
    batches = [b for b in batches if b.num_rows]
    if not batches:
        return SCHEMA.empty_table()
    table = pa.Table.from_batches(batches)
    if table.num_rows > 1 and not _in_order(table):
        table = table.take(pc.sort_indices(table, [("src", "ascending"), ("seq", "ascending")]))
    return table


def _in_order(table: pa.Table) -> bool:
    """Rows already by (src, seq) -- a stage run on a source's partition: skip the copy."""
    src = table.column("src").to_numpy()
    seq = table.column("seq").to_numpy()
    up, same = src[1:] > src[:-1], src[1:] == src[:-1]
    return bool(np.all(up | (same & (seq[1:] >= seq[:-1]))))


def split_beacons(table: pa.Table) -> tuple[int | None, pa.Table]:
    """``(global task id, data rows)``: beacons (``src = -1``) sort first and name the task."""
    n = pc.sum(pc.equal(table.column("src"), -1)).as_py() or 0 if table.num_rows else 0
    if n == 0:
        return None, table
    return table.column("dest")[0].as_py(), table.slice(n)


def iter_values(column: pa.ChunkedArray) -> Iterator[Any]:
    """Decode every msgpack cell of a binary column, chunk by chunk, in one Unpacker each."""
    for chunk in column.chunks:
        n = len(chunk)
        if n == 0:
            continue
        offsets = np.frombuffer(chunk.buffers()[1], dtype=np.int32, count=n + 1, offset=chunk.offset * 4)
        data = chunk.buffers()[2]
        unpacker = msgpack.Unpacker(raw=False, max_buffer_size=0, strict_map_key=False)
        if data is not None:
            unpacker.feed(memoryview(data)[int(offsets[0]):int(offsets[-1])])
        yield from unpacker


def iter_rows(table: pa.Table) -> Iterator[tuple[int, int, Any]]:
    """``(src, sid, values)`` per row, in table order."""
    if table.num_rows == 0:
        return iter(())
    src = table.column("src").to_numpy().tolist()
    sid = table.column("sid").to_numpy().tolist()
    return zip(src, sid, iter_values(table.column("v")))


def max_seq_by_src(table: pa.Table) -> dict[int, int]:
    """Highest emit seq per source task (spout emit counts for the summary); redriven rows
    (seq >= ``REDRIVE_SEQ_BASE``) are not emits of this batch and do not count."""
    if table.num_rows == 0:
        return {}
    seq = table.column("seq")
    if pc.max(seq).as_py() >= REDRIVE_SEQ_BASE:
        table = table.filter(pc.less(seq, REDRIVE_SEQ_BASE))
        if table.num_rows == 0:
            return {}
    grouped = table.group_by("src").aggregate([("seq", "max")])
    return dict(zip(grouped.column("src").to_pylist(), grouped.column("seq_max").to_pylist()))


class RowBuilder:
    """Rows a task sends to other stages, plus the per-source emit counters."""

    def __init__(self) -> None:
        self.dest: list[int] = []
        self.src: list[int] = []
        self.seq: list[int] = []
        self.sid: list[int] = []
        self.v: list[bytes | None] = []  # None: an emit all of whose consumers are fused
        self._seq: dict[int, int] = {}

    def next_seq(self, src: int) -> int:
        s = self._seq.get(src, 0)
        self._seq[src] = s + 1
        return s

    def add(self, dest: int, src: int, seq: int, sid: int, v: bytes | None) -> None:
        self.dest.append(dest)
        self.src.append(src)
        self.seq.append(seq)
        self.sid.append(sid)
        self.v.append(v)

    def add_emit(self, src: int, sid: int, v: bytes | None, dests: tuple[int, ...]) -> None:
        """One emit of task ``src``: its next seq, one row per destination task."""
        seq = self._seq.get(src, 0)
        self._seq[src] = seq + 1
        n = len(dests)
        if n == 1:
            self.dest.append(dests[0])
            self.src.append(src)
            self.seq.append(seq)
            self.sid.append(sid)
            self.v.append(v)
        elif n:
            self.dest.extend(dests)
            self.src.extend([src] * n)
            self.seq.extend([seq] * n)
            self.sid.extend([sid] * n)
            self.v.extend([v] * n)

    def __len__(self) -> int:
        return len(self.dest)

    def mark(self) -> tuple[int, dict[int, int]]:
        """A point to ``rewind`` to: rows so far and the emit counters."""
        return len(self.dest), dict(self._seq)

    def rewind(self, mark: tuple[int, dict[int, int]]) -> None:
        """Forget every row added after ``mark`` (a member's run being redone)."""
        n, seqs = mark
        for column in (self.dest, self.src, self.seq, self.sid, self.v):
            del column[n:]
        self._seq = dict(seqs)

    def batches(self) -> Iterator[pa.RecordBatch]:
        n = len(self.dest)
        for lo in range(0, n, OUT_ROWS_PER_BATCH):
            hi = min(lo + OUT_ROWS_PER_BATCH, n)
            yield to_batch(self.dest[lo:hi], self.src[lo:hi], self.seq[lo:hi], self.sid[lo:hi],
                           self.v[lo:hi])


def to_batch(dest: list[int], src: list[int], seq: list[int], sid: list[int],
             v: list[bytes | None]) -> pa.RecordBatch:
    return pa.RecordBatch.from_arrays(
        [pa.array(dest, pa.int32()), pa.array(src, pa.int32()), pa.array(seq, pa.int64()),
         pa.array(sid, pa.int32()), pa.array(v, pa.binary())],
        schema=SCHEMA,
    )
