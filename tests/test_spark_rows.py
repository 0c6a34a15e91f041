"""Chunked rows between stages (``stormshift/engines/spark/protocol/rows.py``), without Spark.

A row carries a run of consecutive tuples of one source task and stream for
one destination task; after any shuffle, sorting rows by ``(src, seq)`` and
expanding them must give each destination exactly the tuples, in exactly the
order, that one row per tuple gave.
"""

from __future__ import annotations

import itertools
import random

import msgpack
import pyarrow as pa
import pytest

from stormshift.engines.spark.protocol import rows as R


def _emit_script(seed: int, n: int, run: int) -> list[tuple[int, int, list[int], list[object]]]:
    """``(src, sid, dests, values)`` emits: two source tasks, two streams, one to three dests;
    the source task and stream change about every ``run`` emits (1: at random every emit)."""
    rng = random.Random(seed)
    script = []
    src, sid = 11, 0
    for i in range(n):
        if rng.randrange(run) == 0:
            src = rng.choice((11, 12))
        if rng.randrange(run) == 0:
            sid = rng.choice((0, 0, 0, 1))
        dests = sorted(rng.sample((21, 22, 23), rng.choice((1, 1, 2, 3))))
        script.append((src, sid, dests, [f"k{i % 7}", i, "x" * rng.randrange(0, 40)]))
    return script


def _reference(script: list[tuple[int, int, list[int], list[object]]]) -> dict[int, list[tuple[int, int, list[object]]]]:
    """Each dest's tuples as one-row-per-tuple sorted by (src, seq) delivered them."""
    seqs: dict[int, int] = {}
    rows = []
    for src, sid, dests, values in script:
        seq = seqs.get(src, 0)
        seqs[src] = seq + 1
        rows.extend((dest, src, seq, sid, values) for dest in dests)
    out: dict[int, list[tuple[int, int, list[object]]]] = {}
    for dest, src, _seq, sid, values in sorted(rows, key=lambda r: (r[0], r[1], r[2])):
        out.setdefault(dest, []).append((src, sid, values))
    return out


def _build(script: list[tuple[int, int, list[int], list[object]]]) -> pa.Table:
    out = R.RowBuilder()
    for dest in (21, 22, 23):
        out.beacon(dest)
    pack = msgpack.Packer(use_bin_type=True).pack
    for src, sid, dests, values in script:
        out.add_emit(src, sid, pack(values), tuple(dests))
    return pa.Table.from_batches(list(out.batches()))


@pytest.mark.parametrize(("seed", "run"), [(1, 1), (2, 1), (3, 50), (4, 1000)])
def test_chunks_shuffled_and_sorted_give_each_task_the_per_tuple_order(seed, run):
    script = _emit_script(seed, 5000, run)
    table = _build(script)
    if run >= 50:
        assert table.num_rows < 5000 / 10, "tuples travel in chunks, not a row each"
    rng = random.Random(seed)
    for dest, want in _reference(script).items():
        import pyarrow.compute as pc

        mine = table.filter(pc.equal(table.column("dest"), dest))
        shuffled = mine.take(pa.array(rng.sample(range(mine.num_rows), mine.num_rows)))
        task, data = R.split_beacons(R.sorted_table(shuffled.to_batches(max_chunksize=7)))
        assert task == dest
        got = list(R.iter_rows(data))
        assert got == want
        assert R.tuple_count(data) == len(want)


def test_chunk_limits_close_chunks():
    out = R.RowBuilder()
    pack = msgpack.Packer(use_bin_type=True).pack
    for i in range(R.CHUNK_TUPLES * 2 + 5):
        out.add_emit(1, 0, pack([i]), (9,))
    big = msgpack.packb([b"z" * 65536])  # 64 KiB values: CHUNK_BYTES closes a chunk first
    for _ in range(40):
        out.add_emit(2, 0, big, (9,))
    table = pa.Table.from_batches(list(out.batches()))
    counts = [len(c) for c in R.iter_values(table.column("v"))]
    per_chunk = -(-R.CHUNK_BYTES // len(big))  # appended while the chunk is under the limit
    assert counts == [R.CHUNK_TUPLES, R.CHUNK_TUPLES, 5, per_chunk, per_chunk, 40 - 2 * per_chunk]
    assert max(len(v) for v in table.column("v").to_pylist()) < R.CHUNK_BYTES + len(big) + 8
    # the chunk's seq is its last tuple's: spout emit counts come out right
    assert R.max_seq_by_src(table) == {1: R.CHUNK_TUPLES * 2 + 4, 2: 39}


def test_rewind_forgets_what_came_after_the_mark():
    pack = msgpack.Packer(use_bin_type=True).pack
    out = R.RowBuilder()
    out.add_emit(1, 0, pack(["a"]), (5, 6))
    mark = out.mark()
    out.add_emit(1, 0, pack(["b"]), (5,))
    out.add_emit(1, 1, pack(["c"]), (6,))
    out.rewind(mark)
    out.add_emit(1, 0, pack(["d"]), (5,))
    table = R.sorted_table(out.batches())  # by dest: task 5's rows, then task 6's
    assert [(r[0], r[2]) for r in R.iter_rows(table)] == [(1, ["a"]), (1, ["d"]), (1, ["a"])]
    assert table.column("dest").to_pylist() == [5, 5, 6]
    assert table.column("seq").to_pylist() == [0, 1, 0]  # "d" took the seq "b" had


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_output_pages_hand_arrow_each_row_once_and_rewinds_cross_pages(monkeypatch, seed):
    """A task's rows go out in pages (one batch each, ``OUT_BYTES_PER_BATCH``): with small
    pages and rewinds to marks on either side of page boundaries, the batches hold exactly
    the rows a builder without rewound work holds, and a page closes only when full."""
    monkeypatch.setattr(R, "OUT_BYTES_PER_BATCH", 2000)
    monkeypatch.setattr(R, "OUT_ROWS_PER_BATCH", 40)
    rng = random.Random(seed)
    pack = msgpack.Packer(use_bin_type=True).pack
    out, kept = R.RowBuilder(), R.RowBuilder()
    out.beacon(21)
    kept.beacon(21)
    for i in range(400):
        src, sid = rng.choice((11, 12)), rng.choice((0, 1))
        dests = tuple(sorted(rng.sample((21, 22), rng.choice((1, 2)))))
        values = [i, "x" * rng.randrange(0, 300)]
        if rng.randrange(8) == 0:  # a member's run that is redone: its rows are dropped
            mark = out.mark()
            kept.mark()  # both close their open chunks here
            for j in range(rng.randrange(1, 60)):
                out.add_emit(src, sid, pack([-j, "y" * rng.randrange(0, 200)]), dests)
            out.mark()
            out.rewind(mark)
        out.add_emit(src, sid, pack(values), dests)
        kept.add_emit(src, sid, pack(values), dests)
        if rng.randrange(5) == 0:  # chunks close here in both
            out.mark()
            kept.mark()
    batches = list(out.batches())
    assert len(batches) > 5, "small pages: many batches"
    for batch, after in itertools.pairwise(batches):  # a page closes when the next row won't fit
        full = sum(len(v) for v in batch.column("v").to_pylist())
        assert batch.num_rows == 40 or full + len(after.column("v")[0].as_py()) + 5 > 2000  # +5: header bound
    got = pa.Table.from_batches(batches)
    want = pa.Table.from_batches(list(kept.batches()))
    assert got.to_pylist() == want.to_pylist()
    assert list(out.batches()) == [], "consumed: the builder gives its rows once"


def test_array_header_matches_msgpack():
    for n in (0, 1, 15, 16, 1023, 65535, 65536):
        assert R._array_header(n) == msgpack.packb([None] * n)[: len(R._array_header(n))]


# -- the protocol: one schema, a kind per row ------------------------------------------------
def test_the_spark_ddl_names_the_arrow_schema_column_for_column():
    ddl = [tuple(c.split()) for c in R.SCHEMA_DDL.split(", ")]
    assert [name for name, _ in ddl] == R.SCHEMA.names == ["dest", "kind", "src", "seq", "sid", "v"]
    spark_of = {pa.int8(): "tinyint", pa.int32(): "int", pa.int64(): "long", pa.binary(): "binary"}
    assert [t for _, t in ddl] == [spark_of[f.type] for f in R.SCHEMA]
    assert R.SCHEMA.field("kind").type == pa.int8()
    assert [int(k) for k in R.Kind] == [0, 1, 2, 3]


def _table(rows: list[tuple]) -> pa.Table:
    return pa.Table.from_batches([R.to_batch(*map(list, zip(*rows)))])


def test_a_partition_reads_beacons_first_then_each_source_emits_then_its_redriven_rows():
    pack = msgpack.packb
    emit, redriven = R.Kind.TUPLE, R.Kind.REDRIVEN
    rows = [
        (7, redriven, 3, 0, 0, R.chunk_of([["r0"]])),
        (7, emit, 4, 0, 0, pack([["b0"]])),
        (7, emit, 3, 1 << 41, 0, pack([["a-late"]])),  # a seq as large as you like: still an emit
        R.beacon_row(7),
        (7, redriven, 3, 1, 0, R.chunk_of([["r1"]])),
        (7, emit, 3, 0, 0, pack([["a0"]])),
    ]
    rng = random.Random(5)
    for _ in range(10):
        rng.shuffle(rows)
        task, data = R.split_beacons(R.sorted_table(_table(rows).to_batches(max_chunksize=2)))
        assert task == 7
        got = [v[0] for _src, _sid, v in R.iter_rows(data)]
        assert got == ["a0", "a-late", "r0", "r1", "b0"]
        assert data.column("kind").to_pylist() == [emit, emit, redriven, redriven, emit]
    assert R.max_seq_by_src(data) == {3: 1 << 41, 4: 0}  # redriven rows are no emits


def test_a_partition_of_several_tasks_splits_by_task_each_in_protocol_order():
    """A Spark task may run several Storm tasks (``run_partition``): its rows split by
    beacon, each task's rows in the one-task order; beacons the upstream stage sent twice
    name the task once; rows of a task the plan gave no beacon are left out."""
    pack = msgpack.packb
    emit = R.Kind.TUPLE
    rows = [
        R.beacon_row(4), R.beacon_row(9), R.beacon_row(9), R.beacon_row(12),
        (9, emit, 2, 1, 0, pack([["n1"]])), (4, emit, 3, 0, 0, pack([["f0"]])),
        (9, emit, 2, 0, 0, pack([["n0"]])), (9, emit, 1, 0, 0, pack([["m0"]])),
        (11, emit, 2, 0, 0, pack([["stray"]])),
    ]
    rng = random.Random(3)
    for _ in range(10):
        rng.shuffle(rows)
        tasks = R.split_tasks(R.sorted_table(_table(rows).to_batches(max_chunksize=3)))
        assert [t for t, _ in tasks] == [4, 9, 12]
        got = {t: [v[0] for _src, _sid, v in R.iter_rows(data)] for t, data in tasks}
        assert got == {4: ["f0"], 9: ["m0", "n0", "n1"], 12: []}
    assert R.split_tasks(R.SCHEMA.empty_table()) == []
    sent = pa.Table.from_batches([R.beacons_batch([5, 6])])
    assert [t for t, data in R.split_tasks(sent) if data.num_rows == 0] == [5, 6]


def test_a_partition_without_beacon_names_no_task_and_the_builder_writes_every_kind():
    out = R.RowBuilder()
    out.beacon(9)
    out.read(9, 2, R.chunk_of([{"range": 1}]))
    out.add(9, 2, 0, 1, msgpack.packb(["x"]))
    table = pa.Table.from_batches(list(out.batches()))
    assert table.column("kind").to_pylist() == [R.Kind.BEACON, R.Kind.READ, R.Kind.TUPLE]
    assert R.beacon_row(9) == tuple(c[0] for c in table.slice(0, 1).to_pydict().values())
    assert R.max_seq_by_src(table) == {2: 0}  # neither the beacon nor the read row counts
    assert R.split_beacons(R.sorted_table([table.slice(1).to_batches()[0]]))[0] is None
    assert R.split_beacons(R.SCHEMA.empty_table()) == (None, R.SCHEMA.empty_table())


def test_a_spout_range_travels_in_a_read_row_and_comes_back_whole():
    from stormshift.engines.spark.protocol.spoutrange import Run, SpoutRange

    wal = SpoutRange("numbers", 1, wal=(10, 42))
    replay = SpoutRange("lines", 0, replay=(("part-0.jsonl", 0, 7), ("part-2.jsonl", "3", "9")))
    for rng in (wal, replay):
        (cell,) = next(R.iter_values(pa.chunked_array([[rng.cell("head")]], pa.binary())))
        assert SpoutRange.from_item(cell) == (rng, "head")
    packed = Run(0, 1, (5,), [msgpack.packb([1, "a"]), msgpack.packb([2, "b"])], True)
    plain = Run(0, 1, (5,), [[1, "a"], [2, "b"]], False)
    assert packed.values() == plain.values() == [[1, "a"], [2, "b"]]
    assert plain.packed_values(msgpack.Packer(use_bin_type=True).pack) == packed.items
