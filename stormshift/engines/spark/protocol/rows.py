"""The row protocol between Spark stages: the one owner of the row schema and of row kinds.

Every row that crosses Spark -- the source's ``read``, a stage's output, the
driver's beacons and redriven rows -- has the columns of ``SCHEMA``
(``SCHEMA_DDL`` for Spark), and says what it is in ``kind`` (``Kind``):

- ``dest``: global task id of the consumer task the row is for;
- ``kind``: ``BEACON``, ``TUPLE``, ``READ`` or ``REDRIVEN`` (below);
- ``src``: global task id of the emitting task (0 in a beacon);
- ``seq``: a ``TUPLE`` chunk's last tuple's index among its task's emits in this
  batch; a ``REDRIVEN`` row's index among the batch's redriven rows (0 else);
- ``sid``: stream code (index of ``(component, stream)`` in ``Layout.streams``;
  0 in a beacon or read row);
- ``v``: a *chunk*, the msgpack array of value lists of consecutive tuples of
  ``src`` on ``sid`` for ``dest`` (a ``READ`` row: an array of one range; a
  beacon: empty).

A partition holds the rows of one task or of several (``split_tasks``: a Spark
task may run several Storm tasks of a group, one after the other). It is read in
``sorted_table`` order: by ``dest``, each task's beacon first, then by
``(src, kind, seq)``: each source task's emits in emit order (chunks cut a
task's tuples for one destination into contiguous runs, so this restores the
per-tuple order exactly, whatever the shuffle did), its redriven rows after
them. Spark moves one row per ``CHUNK_TUPLES`` tuples instead of one per tuple.

Values are decoded in bulk: a partition's ``v`` column is one contiguous
buffer of msgpack arrays, fed to ONE ``Unpacker``; or, where the install built
``engines/spark/dataplane/cwire.pyx`` (``native.load``), ``iter_input`` hands each cell
over raw (a memoryview) and the kernel decodes it with ``UNPACK`` straight into Tuples
and their values namedtuples. Output chunks are gathered in plain lists and turned into record
batches at the end of the task.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import msgpack
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from stormshift import native

__all__ = ["SCHEMA", "SCHEMA_DDL", "SPARK_TYPES", "Kind", "RowBuilder", "beacon_row", "beacons_batch", "chunk_of", "decoded", "decoded_chunks",
           "iter_cells", "iter_chunks", "iter_input", "iter_rows", "iter_values", "max_seq_by_src", "redriven_row", "sorted_table",
           "split_beacons", "split_tasks", "to_batch", "tuple_count"]


class Kind(enum.IntEnum):
    """What a row is (the ``kind`` column)."""

    BEACON = 0
    """Names task ``dest``: every task of a stage gets one each batch, so it runs (ticks,
    snapshots) without input and learns its task id (Spark renumbers partitions in unions)."""
    TUPLE = 1
    """A chunk of tuples ``src`` emitted in this batch."""
    READ = 2
    """A spout range the head task ``dest`` reads itself (``spoutrange``): no tuple crossed."""
    REDRIVEN = 3
    """A dead letter sent back (``driver/redrive.py``): a chunk of one tuple, no emit of ``src``
    (not in the spout counts), after every emit of ``src``."""


_COLUMNS = (("dest", pa.int32(), "int"), ("kind", pa.int8(), "tinyint"),
            ("src", pa.int32(), "int"), ("seq", pa.int64(), "long"),
            ("sid", pa.int32(), "int"), ("v", pa.binary(), "binary"))
SCHEMA = pa.schema([(name, arrow) for name, arrow, _ in _COLUMNS])
SPARK_TYPES = tuple((name, ddl) for name, _, ddl in _COLUMNS)
SCHEMA_DDL = ", ".join(f"{name} {ddl}" for name, ddl in SPARK_TYPES)
OUT_ROWS_PER_BATCH = 1 << 17
OUT_BYTES_PER_BATCH = 4 << 20  # a page (``RowBuilder``): output leaves a few MiB at a time
# A chunk closes at this many tuples or bytes. 32 tuples already cut Spark's rows 32-fold;
# longer chunks were slower in bench/stage_overhead.py (1024: +15-40% per tuple), as a
# decoded chunk's value lists all live at once and survive the young GC generation.
CHUNK_TUPLES = 32
CHUNK_BYTES = 1 << 20
_BEACON, _TUPLE, _READ, _REDRIVEN = (int(k) for k in Kind)
_CWIRE = native.load("stormshift.engines.spark.dataplane.cwire")
RAW_CELLS = _CWIRE is not None
"""``iter_input`` hands cells over raw: the kernel decodes them in C with ``UNPACK``
(``dataplane/cwire.pyx``), whose ``Writer`` is also ``writer``'s (the same chunks, written
in C)."""
UNPACK: Callable[[memoryview, Any, int], list[Any]] | None = (
    _CWIRE.unpack_chunk if _CWIRE is not None else None)
"""``unpack(cell, values type or None, arity)``: a raw cell of ``iter_input`` decoded into
its value lists (values namedtuples where one has the arity), for ``Kernel.run_chunks``."""


def beacon_row(dest: int) -> tuple[int, int, int, int, int, bytes]:
    """The beacon of task ``dest``, in ``SCHEMA`` column order."""
    return (dest, _BEACON, 0, 0, 0, b"")


def redriven_row(dest: int, src: int, seq: int, sid: int,
                 values: list[Any]) -> tuple[int, int, int, int, int, bytes]:
    """A redriven tuple for task ``dest``, as if ``src`` emitted it on ``sid`` again."""
    return (dest, _REDRIVEN, src, seq, sid, chunk_of([values]))


def sorted_table(batches: Iterable[pa.RecordBatch]) -> pa.Table:
    """All rows of a partition in protocol order (module doc): by ``dest``, its beacon first,
    then by ``(src, kind, seq)`` -- deterministic whatever the shuffle did."""
    batches = [b for b in batches if b.num_rows]
    if not batches:
        return SCHEMA.empty_table()
    table = pa.Table.from_batches(batches)
    if table.num_rows > 1:
        keys = _order_keys(table)
        if not _in_order(keys):
            table = table.take(pa.array(np.lexsort(keys[::-1])))
    return table


def _order_keys(table: pa.Table) -> list[np.ndarray]:
    """The sort keys, most significant first: dest, not a beacon, src, kind, seq."""
    kind = table.column("kind").to_numpy()
    return [table.column("dest").to_numpy(), kind != _BEACON, table.column("src").to_numpy(),
            kind, table.column("seq").to_numpy()]


def _in_order(keys: list[np.ndarray]) -> bool:
    """Rows already in order (a stage run on a source's partition): skip the copy."""
    equal = np.ones(len(keys[0]) - 1, dtype=bool)
    ahead = np.zeros(len(keys[0]) - 1, dtype=bool)
    for key in keys:
        a, b = key[:-1], key[1:]
        ahead |= equal & (b > a)
        equal &= b == a
    return bool(np.all(ahead | equal))


def split_beacons(table: pa.Table) -> tuple[int | None, pa.Table]:
    """``(global task id, data rows)`` of a ``sorted_table``: its beacons come first and name
    the task."""
    if table.num_rows == 0:
        return None, table
    n = pc.sum(pc.equal(table.column("kind"), _BEACON)).as_py() or 0
    if n == 0:
        return None, table
    return table.column("dest")[0].as_py(), table.slice(n)


def split_tasks(table: pa.Table) -> list[tuple[int, pa.Table]]:
    """``[(global task id, its data rows)]`` of a ``sorted_table`` holding one task's rows or
    several tasks', in task order; a task is named by its beacon (rows of a task without
    one are not the plan's and are left out, as ``split_beacons`` leaves them)."""
    if table.num_rows == 0:
        return []
    dest = table.column("dest").to_numpy()
    beacon = table.column("kind").to_numpy() == _BEACON
    starts = [0, *(np.flatnonzero(dest[1:] != dest[:-1]) + 1).tolist()]
    ends = [*starts[1:], len(dest)]
    out = []
    for a, b in zip(starts, ends):
        n = int(np.count_nonzero(beacon[a:b]))
        if n:
            out.append((int(dest[a]), table.slice(a + n, b - a - n)))
    return out


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


def iter_cells(column: pa.ChunkedArray) -> Iterator[Any]:
    """Every cell of a binary column as it is stored: a memoryview of its msgpack bytes."""
    for chunk in column.chunks:
        n = len(chunk)
        if n == 0:
            continue
        offsets = np.frombuffer(chunk.buffers()[1], dtype=np.int32, count=n + 1,
                                offset=chunk.offset * 4).tolist()
        data = chunk.buffers()[2]
        view = memoryview(data) if data is not None else memoryview(b"")
        for i in range(n):
            yield view[offsets[i]:offsets[i + 1]]


def decoded(cell: Any) -> Any:
    """A cell of ``iter_input`` as ``iter_values`` gives it (decoded, whichever it was)."""
    if type(cell) is memoryview:
        return msgpack.unpackb(cell, raw=False, strict_map_key=False)
    return cell


def iter_input(table: pa.Table) -> Iterator[tuple[int, int, Any]]:
    """``iter_chunks`` for the kernel (``Kernel.run_chunks``): each row's value lists, or,
    where ``RAW_CELLS``, its raw cell (a memoryview), which the kernel decodes itself."""
    if not RAW_CELLS or table.num_rows == 0:
        return iter_chunks(table)
    src = table.column("src").to_numpy().tolist()
    sid = table.column("sid").to_numpy().tolist()
    return zip(src, sid, iter_cells(table.column("v")))


def decoded_chunks(chunks: Iterable[tuple[int, int, Any]]) -> Iterator[tuple[int, int, Any]]:
    """``iter_input``'s chunks with every raw cell decoded: for code that counts or cuts
    value lists (the fault points), not the hot path."""
    return ((src, sid, decoded(values)) for src, sid, values in chunks)


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
    """Highest emit seq per source task (spout emit counts for the summary): ``TUPLE`` rows
    only (a redriven row is no emit of this batch)."""
    if table.num_rows == 0:
        return {}
    kind = table.column("kind")
    if pc.any(pc.not_equal(kind, _TUPLE)).as_py():
        table = table.filter(pc.equal(kind, _TUPLE))
        if table.num_rows == 0:
            return {}
    grouped = table.group_by("src").aggregate([("seq", "max")])
    return dict(zip(grouped.column("src").to_pylist(), grouped.column("seq_max").to_pylist()))


class RowBuilder:
    """Chunks a task sends to other stages, plus the per-source emit counters.

    ``add``/``add_emit`` take one tuple (packed values) at a time; a tuple joins
    its destination's open chunk when it continues it (same src and stream,
    under the size limits), else that chunk closes and a new one opens.
    ``writer(src)`` is ``add_emit`` for one source task as a closure: the per-emit
    path of a stage (``task/output.py``), the same chunks at a third of the cost.
    An open chunk is ``[src, sid, last seq, bytes, packed value, ...]``.

    A closed chunk's bytes are appended to a *page* (a ``bytearray`` of about
    ``OUT_BYTES_PER_BATCH``) with its end offset: one page is one output batch's
    ``v`` column, handed to Arrow without a copy (``batches``). A task's output
    then lives once, in a few large buffers freed page by page as they leave,
    not as a Python ``bytes`` per row plus Arrow's copy of them all.
    """

    def __init__(self) -> None:
        self.dest: list[int] = []
        self.kind: list[int] = []
        self.src: list[int] = []
        self.seq: list[int] = []
        self.sid: list[int] = []
        self._pages: list[bytearray] = [bytearray()]  # the rows' v cells, page by page
        self._page_first: list[int] = [0]  # each page's first row
        self._ends: list[int] = []  # each row's end offset in its page
        self._open: dict[int, list[Any]] = {}  # dest -> open chunk (class doc)
        self._seq: dict[int, list[int]] = {}  # src -> [its next seq]: a cell writers share

    def _cell(self, src: int) -> list[int]:
        cell = self._seq.get(src)
        if cell is None:
            cell = self._seq[src] = [0]
        return cell

    def next_seq(self, src: int) -> int:
        cell = self._cell(src)
        s = cell[0]
        cell[0] = s + 1
        return s

    def emitted(self, src: int) -> int:
        """Emits of task ``src`` so far (its next seq)."""
        return self._cell(src)[0]

    def beacon(self, dest: int) -> None:
        """The ``BEACON`` naming task ``dest``."""
        self._row(dest, _BEACON, 0, 0, 0, b"")

    def read(self, dest: int, src: int, cell: bytes) -> None:
        """A ``READ`` row: task ``dest`` reads spout task ``src``'s range ``cell`` itself."""
        self._row(dest, _READ, src, 0, 0, cell)

    def add(self, dest: int, src: int, seq: int, sid: int, v: bytes) -> None:
        """One tuple (``v``: its packed values) for task ``dest``; seqs of a src only grow."""
        c = self._open.get(dest)
        if c is not None:
            if c[0] == src and c[1] == sid and c[3] < CHUNK_BYTES and len(c) < CHUNK_TUPLES + 4:
                c[2] = seq
                c[3] += len(v)
                c.append(v)
                return
            self._close(dest, c)
        self._open[dest] = [src, sid, seq, len(v), v]

    def add_emit(self, src: int, sid: int, v: bytes, dests: tuple[int, ...]) -> None:
        """One emit of task ``src``: its next seq, the tuple added for every destination task."""
        seq = self.next_seq(src)
        for dest in dests:
            self.add(dest, src, seq, sid, v)

    def writer(self, src: int) -> Callable[[int, bytes, tuple[int, ...]], None]:
        """``add_emit`` bound to task ``src``: ``write(sid, v, dests)``. Locals only, and the
        open chunk's src and sid compared by identity first (a writer passes the same int
        objects every time; ``==`` decides when they differ)."""
        cell = self._cell(src)
        opened = self._open
        get = opened.get
        close = self._close
        max_len = CHUNK_TUPLES + 4  # the chunk's four fields, then its packed values
        max_bytes = CHUNK_BYTES
        if _CWIRE is not None:
            return _CWIRE.Writer(cell, opened, close, src, max_len, max_bytes).write  # type: ignore[no-any-return]

        def write(sid: int, v: bytes, dests: tuple[int, ...]) -> None:
            s = cell[0]
            cell[0] = s + 1
            if not dests:
                return
            n = len(v)
            for dest in dests:
                c = get(dest)
                if c is not None:
                    c_src, c_sid = c[0], c[1]
                    if (c_src is src or c_src == src) and (c_sid is sid or c_sid == sid) \
                            and c[3] < max_bytes and len(c) < max_len:
                        c[2] = s
                        c[3] += n
                        c.append(v)
                        continue
                    close(dest, c)
                opened[dest] = [src, sid, s, n, v]

        return write

    def _close(self, dest: int, c: list[Any]) -> None:
        """The open chunk ``c`` becomes a row: its parts joined once (one page resize, not
        one per part)."""
        page = self._page(c[3] + 5)
        page += _array_header(len(c) - 4)
        page += b"".join(c[4:])
        self._append(dest, _TUPLE, c[0], c[2], c[1], len(page))

    def _row(self, dest: int, kind: int, src: int, seq: int, sid: int, v: bytes) -> None:
        page = self._page(len(v))
        page += v
        self._append(dest, kind, src, seq, sid, len(page))

    def _page(self, size: int) -> bytearray:
        """The page the next row's ``size`` bytes go to (a new one when the last is full)."""
        page = self._pages[-1]
        rows = len(self.dest) - self._page_first[-1]
        if rows and (len(page) + size > OUT_BYTES_PER_BATCH or rows >= OUT_ROWS_PER_BATCH):
            page = bytearray()
            self._pages.append(page)
            self._page_first.append(len(self.dest))
        return page

    def _append(self, dest: int, kind: int, src: int, seq: int, sid: int, end: int) -> None:
        self.dest.append(dest)
        self.kind.append(kind)
        self.src.append(src)
        self.seq.append(seq)
        self.sid.append(sid)
        self._ends.append(end)

    def _flush(self) -> None:
        for dest in sorted(self._open):
            self._close(dest, self._open[dest])
        self._open.clear()

    def mark(self) -> tuple[int, dict[int, int]]:
        """A point to ``rewind`` to: rows so far (open chunks closed) and the emit counters."""
        self._flush()
        return len(self.dest), {src: cell[0] for src, cell in self._seq.items()}

    def sent(self, since: int) -> list[int]:
        """Destination tasks of the tuple rows added after row ``since`` (a ``mark``'s),
        sorted: what a member sent other stages (``driver/waves.py``). Closes open chunks."""
        self._flush()
        kind, dest = self.kind, self.dest
        return sorted({dest[i] for i in range(since, len(dest)) if kind[i] == _TUPLE})

    def rewind(self, mark: tuple[int, dict[int, int]]) -> None:
        """Forget every tuple added after ``mark`` (a member's run being redone)."""
        n, seqs = mark
        self._open.clear()  # every open chunk was opened after the mark
        for column in (self.dest, self.kind, self.src, self.seq, self.sid):
            del column[n:]
        pages, first = self._pages, self._page_first
        while len(pages) > 1 and first[-1] >= n:  # pages that start after the mark
            pages.pop()
            first.pop()
        del pages[-1][self._ends[n - 1] if n > first[-1] else 0:]
        del self._ends[n:]
        for src, cell in self._seq.items():  # in place: writers hold the cells
            cell[0] = seqs.get(src, 0)

    def batches(self) -> Iterator[pa.RecordBatch]:
        """The rows as record batches, one per page (class doc), each page's bytes handed to
        Arrow as they are. Consumes the builder: a page is released once its batch is."""
        self._flush()
        pages, first, ends = self._pages, self._page_first + [len(self.dest)], self._ends
        self._pages, self._page_first, self._ends = [bytearray()], [0], []
        for i, page in enumerate(pages):
            lo, hi = first[i], first[i + 1]
            if hi == lo:
                continue
            offsets = np.empty(hi - lo + 1, dtype=np.int32)
            offsets[0] = 0
            offsets[1:] = ends[lo:hi]
            v = pa.Array.from_buffers(pa.binary(), hi - lo, [None, pa.py_buffer(offsets), pa.py_buffer(page)])
            batch = to_batch(self.dest[lo:hi], self.kind[lo:hi], self.src[lo:hi], self.seq[lo:hi],
                             self.sid[lo:hi], v)
            pages[i] = bytearray()  # the batch holds the page now
            del page
            yield batch
        for column in (self.dest, self.kind, self.src, self.seq, self.sid):
            column.clear()


def beacons_batch(dests: Iterable[int]) -> pa.RecordBatch:
    """The beacons of tasks ``dests``, as a stage emits them for the tasks reading it
    (``StageJob.beacons``): the group reading it needs no Spark task of its own for them."""
    dests = list(dests)
    zeros = [0] * len(dests)
    return to_batch(dests, [_BEACON] * len(dests), zeros, zeros, zeros, [b""] * len(dests))


def to_batch(dest: list[int], kind: list[int], src: list[int], seq: list[int], sid: list[int],
             v: list[bytes] | pa.Array) -> pa.RecordBatch:
    """One record batch of ``SCHEMA`` from its columns (``v`` may be built already)."""
    ints = [pa.array(column, arrow) for column, (_, arrow, _) in zip((dest, kind, src, seq, sid), _COLUMNS)]
    return pa.RecordBatch.from_arrays(
        [*ints, v if isinstance(v, pa.Array) else pa.array(v, pa.binary())], schema=SCHEMA)
