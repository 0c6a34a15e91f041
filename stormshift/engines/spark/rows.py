"""Arrow in, Arrow out: the row format between stages (see ``layout.ROW_SCHEMA_DDL``).

A row is a *chunk*: consecutive tuples of one source task on one stream for
one destination task. ``v`` is a msgpack array of the tuples' value lists,
``seq`` the seq of the chunk's LAST tuple. Chunks cut a task's tuples for one
destination into contiguous runs, so sorting rows by ``(src, seq)`` restores
exactly the per-tuple order a row per tuple had, while Spark moves one row
per ``CHUNK_TUPLES`` tuples instead of one per tuple (its per-row cost: Arrow
to row conversion, shuffle write and read).

Values are decoded in bulk: a partition's ``v`` column is one contiguous
buffer of msgpack arrays, fed to ONE ``Unpacker``. Output chunks are
gathered in plain lists and turned into record batches at the end of the task.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

import msgpack
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

__all__ = ["SCHEMA", "RowBuilder", "chunk_of", "iter_chunks", "iter_rows", "iter_values", "max_seq_by_src",
           "sorted_table", "tuple_count"]

SCHEMA = pa.schema(
    [("dest", pa.int32()), ("src", pa.int32()), ("seq", pa.int64()), ("sid", pa.int32()),
     ("v", pa.binary())]
)
OUT_ROWS_PER_BATCH = 1 << 17
# A chunk closes at this many tuples or bytes. 32 tuples already cut Spark's rows 32-fold;
# longer chunks were slower in bench/stage_overhead.py (1024: +15-40% per tuple), as a
# decoded chunk's value lists all live at once and survive the young GC generation.
CHUNK_TUPLES = 32
CHUNK_BYTES = 1 << 20
# Redriven dead letters (``driver/redrive.py``) carry seqs from here up: they sort after
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
    """Decode every msgpack cell of a binary column (a chunk: a list of value lists), in one
    Unpacker per Arrow chunk."""
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
    """``(src, sid, values)`` per tuple, in table order (chunks expanded)."""
    return _expand(iter_chunks(table))


def iter_chunks(table: pa.Table) -> Iterator[tuple[int, int, list[Any]]]:
    """``(src, sid, value lists)`` per row, in table order (a stage's input, chunk by chunk)."""
    if table.num_rows == 0:
        return iter(())
    src = table.column("src").to_numpy().tolist()
    sid = table.column("sid").to_numpy().tolist()
    return zip(src, sid, iter_values(table.column("v")))


def _expand(chunks: Iterator[tuple[int, int, list[Any]]]) -> Iterator[tuple[int, int, Any]]:
    for src, sid, values_list in chunks:
        for values in values_list:
            yield src, sid, values


def tuple_count(table: pa.Table) -> int:
    """Tuples in ``table``'s chunks (decodes them: for fault points, not the hot path)."""
    return sum(len(c) for c in iter_values(table.column("v"))) if table.num_rows else 0


def chunk_of(values_list: list[Any]) -> bytes:
    """One chunk's ``v``: the msgpack array of these value lists."""
    return msgpack.packb(values_list, use_bin_type=True)


def _array_header(n: int) -> bytes:
    """msgpack's array header for ``n`` elements (the packed elements follow)."""
    if n < 16:
        return bytes((0x90 | n,))
    if n < 1 << 16:
        return b"\xdc" + n.to_bytes(2, "big")
    return b"\xdd" + n.to_bytes(4, "big")


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
    """Chunks a task sends to other stages, plus the per-source emit counters.

    ``add``/``add_emit`` take one tuple (packed values) at a time; a tuple joins
    its destination's open chunk when it continues it (same src and stream,
    under the size limits), else that chunk closes and a new one opens.
    """

    def __init__(self) -> None:
        self.dest: list[int] = []
        self.src: list[int] = []
        self.seq: list[int] = []
        self.sid: list[int] = []
        self.v: list[bytes] = []
        self._open: dict[int, list[Any]] = {}  # dest -> [src, sid, last seq, packed parts, bytes]
        self._seq: dict[int, int] = {}

    def next_seq(self, src: int) -> int:
        s = self._seq.get(src, 0)
        self._seq[src] = s + 1
        return s

    def beacon(self, dest: int) -> None:
        """The row naming task ``dest`` (``src = -1``, no tuples)."""
        self._row(dest, -1, -1, -1, b"")

    def add(self, dest: int, src: int, seq: int, sid: int, v: bytes) -> None:
        """One tuple (``v``: its packed values) for task ``dest``; seqs of a src only grow."""
        c = self._open.get(dest)
        if c is not None:
            if c[0] == src and c[1] == sid and c[4] < CHUNK_BYTES and len(c[3]) < CHUNK_TUPLES:
                c[2] = seq
                c[3].append(v)
                c[4] += len(v)
                return
            self._close(dest, c)
        self._open[dest] = [src, sid, seq, [v], len(v)]

    def add_emit(self, src: int, sid: int, v: bytes, dests: tuple[int, ...]) -> None:
        """One emit of task ``src``: its next seq, the tuple added for every destination task."""
        seq = self._seq.get(src, 0)
        self._seq[src] = seq + 1
        opened = self._open
        for dest in dests:
            c = opened.get(dest)
            if c is not None and c[0] == src and c[1] == sid and c[4] < CHUNK_BYTES \
                    and len(c[3]) < CHUNK_TUPLES:
                c[2] = seq
                c[3].append(v)
                c[4] += len(v)
            else:
                self.add(dest, src, seq, sid, v)

    def _close(self, dest: int, c: list[Any]) -> None:
        parts = c[3]
        self._row(dest, c[0], c[2], c[1], _array_header(len(parts)) + b"".join(parts))

    def _row(self, dest: int, src: int, seq: int, sid: int, v: bytes) -> None:
        self.dest.append(dest)
        self.src.append(src)
        self.seq.append(seq)
        self.sid.append(sid)
        self.v.append(v)

    def _flush(self) -> None:
        for dest in sorted(self._open):
            self._close(dest, self._open[dest])
        self._open.clear()

    def mark(self) -> tuple[int, dict[int, int]]:
        """A point to ``rewind`` to: rows so far (open chunks closed) and the emit counters."""
        self._flush()
        return len(self.dest), dict(self._seq)

    def rewind(self, mark: tuple[int, dict[int, int]]) -> None:
        """Forget every tuple added after ``mark`` (a member's run being redone)."""
        n, seqs = mark
        self._open.clear()  # every open chunk was opened after the mark
        for column in (self.dest, self.src, self.seq, self.sid, self.v):
            del column[n:]
        self._seq = dict(seqs)

    def batches(self) -> Iterator[pa.RecordBatch]:
        self._flush()
        n = len(self.dest)
        for lo in range(0, n, OUT_ROWS_PER_BATCH):
            hi = min(lo + OUT_ROWS_PER_BATCH, n)
            yield to_batch(self.dest[lo:hi], self.src[lo:hi], self.seq[lo:hi], self.sid[lo:hi],
                           self.v[lo:hi])


def to_batch(dest: list[int], src: list[int], seq: list[int], sid: list[int],
             v: list[bytes]) -> pa.RecordBatch:
    return pa.RecordBatch.from_arrays(
        [pa.array(dest, pa.int32()), pa.array(src, pa.int32()), pa.array(seq, pa.int64()),
         pa.array(sid, pa.int32()), pa.array(v, pa.binary())],
        schema=SCHEMA,
    )
